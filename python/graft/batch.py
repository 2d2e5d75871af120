"""graft.batch: many models on any ``concurrent.futures.Executor``.

    import graft, graft.batch
    rules = graft.RuleSet.compile(pipeline="inference")
    report = graft.batch.apply(["models/"], rules, "out/")         # threads
    with concurrent.futures.ProcessPoolExecutor() as pool:
        report = graft.batch.apply(["models/"], rules, "out/", executor=pool)
    # a Dask cluster: executor=client.get_executor(); Ray: its executor

Each model is one task: its input read and its output written by the
worker (the paths must be visible to it), rules compiled once per worker
process. A model that fails is tried again (``retries``) and then reported;
the rest go on. The report is graft's batch report (``graft apply --report``
of a batch), merged.
"""

from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Dict, Optional, Sequence, Union

import graft
from graft import _graft

__all__ = ["apply", "plan"]


def plan(inputs: Sequence[Union[str, "os.PathLike[str]"]], out_dir: str,
         shard: str = ""):
    """The (input, output) pairs a batch would do: folders expanded,
    collisions refused, ``shard`` ("i/n") applied."""
    return [(i, o) for i, o, _ in _plan(inputs, out_dir, shard)]


def _plan(inputs, out_dir, shard):
    """(input, output, why the model is not read: "" when it is)."""
    return [tuple(p) for p in _graft.batch_plan(
        [os.fspath(i) for i in inputs], os.fspath(out_dir), shard)]


def _apply_model(input_path: str, output_path: str, refused: str,
                 rules: "graft.RuleSet", options: Dict[str, Any]) -> str:
    """One model, in a worker: its batch report entry as JSON."""
    return _graft.batch_model(input_path, output_path, refused, rules._native,
                              options["outputs"], options["custom_ops"],
                              options["max_rewrites"],
                              options["skip_unchanged"],
                              options["output_format"], options["functions"],
                              options["out_dir"])


def _failed(input_path: str, output_path: str, _refused: str,
            error: BaseException) -> str:
    import json  # pylint: disable=import-outside-toplevel
    return json.dumps({"models": [{"input": input_path, "output": output_path,
                                   "status": "failed",
                                   "error": f"{type(error).__name__}: {error}"}]})


def apply(inputs: Sequence[Union[str, "os.PathLike[str]"]],
          rules: Union["graft.RuleSet", str, Sequence[str]],
          out_dir: Union[str, "os.PathLike[str]"],
          executor: Optional[concurrent.futures.Executor] = None, *,
          outputs: Sequence[str] = (), custom_ops: Sequence[str] = (),
          max_rewrites: int = 0, skip_unchanged: bool = False,
          shard: str = "", output_format: str = "auto", retries: int = 1,
          functions: Union[str, Sequence[str]] = "all",
          **compile_options) -> Dict[str, Any]:
    """Applies ``rules`` to every model under ``inputs`` (files and
    folders), writing each to ``out_dir`` (same relative path), one task
    per model on ``executor`` (threads on this machine's cores when None).
    Returns the merged batch report: ``models`` (each with ``status``
    ok / unchanged / skipped / failed, its ``error`` and ``attempts``),
    counts and ``rewrites_per_rule``."""
    rule_set = rules if isinstance(rules, graft.RuleSet) else \
        graft.RuleSet.compile(rules, **compile_options)
    pairs = _plan(inputs, out_dir, shard)
    options = dict(outputs=list(outputs), custom_ops=list(custom_ops),
                   max_rewrites=int(max_rewrites),
                   skip_unchanged=bool(skip_unchanged),
                   output_format=output_format,
                   functions=graft._functions(functions),
                   out_dir=os.fspath(out_dir))
    own = executor is None
    if own:
        executor = concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1)
    try:
        results: Dict[int, str] = {}
        attempts = {i: 0 for i in range(len(pairs))}
        pending = {}

        def submit(i):
            attempts[i] += 1
            future = executor.submit(_apply_model, *pairs[i], rule_set, options)
            pending[future] = i

        for i in range(len(pairs)):
            submit(i)
        while pending:
            done, _ = concurrent.futures.wait(
                list(pending), return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                try:
                    result = future.result()
                    failed = '"status": "failed"' in result
                except Exception as e:  # pylint: disable=broad-except
                    result, failed = _failed(*pairs[i], e), True
                if failed and attempts[i] <= retries:
                    submit(i)
                else:
                    results[i] = result
    finally:
        if own:
            executor.shutdown()
    report = graft._report(_graft.merge_batch_reports(
        [results[i] for i in range(len(pairs))]))
    by_input = {p[0]: attempts[i] for i, p in enumerate(pairs)}
    for m in report.get("models", []):
        m["attempts"] = by_input.get(m.get("input"), 1)
    if shard:
        report["shard"] = shard
    return report

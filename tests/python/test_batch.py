"""graft.batch on executors: threads, processes and a Dask cluster give
the report one process gives; a failing model is retried once and then
reported; every other model is done once."""
import concurrent.futures
import shutil

import pytest

import graft
import graft.batch
from conftest import repo_path

EXAMPLE = repo_path("examples", "keras_cnn.pb")


@pytest.fixture()
def models(tmp_path):
    folder = tmp_path / "models"
    (folder / "sub").mkdir(parents=True)
    for i in range(4):
        shutil.copy(EXAMPLE, folder / f"cnn{i}.pb")
    shutil.copy(EXAMPLE, folder / "sub" / "cnn.pb")
    (folder / "broken.pb").write_bytes(b"\x0a\xff\xff not a graph")
    return folder


def comparable(report):
    """What must agree between runs (not timings or job counts)."""
    keys = ("ok", "unchanged", "skipped", "failed", "rewrites")
    models = sorted((m["input"], m["output"], m["status"], m.get("error", ""),
                     m.get("report", {}).get("rewrites", 0),
                     m.get("report", {}).get("nodes_after", 0))
                    for m in report["models"])
    return {k: report.get(k, 0) for k in keys}, models, report.get("rewrites_per_rule")


def check(report, models_dir):
    assert report["ok"] == 5 and report["failed"] == 1
    for m in report["models"]:
        if m["input"].endswith("broken.pb"):
            assert m["status"] == "failed" and m["attempts"] == 2
            assert "not a valid binary GraphDef" in m["error"]
        else:
            assert m["status"] == "ok" and m["attempts"] == 1
    assert len({m["input"] for m in report["models"]}) == 6


def test_threads_processes_and_the_cli_agree(models, tmp_path):
    rules = graft.RuleSet.compile(pipeline="inference")
    one = graft.batch.apply([models], rules, tmp_path / "one",
                            executor=concurrent.futures.ThreadPoolExecutor(1))
    check(one, models)
    assert graft.load(tmp_path / "one" / "sub" / "cnn.pb").num_nodes == 63
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        procs = graft.batch.apply([models], rules, tmp_path / "procs", executor=pool)
    check(procs, models)
    assert comparable(procs)[0] == comparable(one)[0]
    assert comparable(procs)[2] == comparable(one)[2]


def test_dask_local_cluster(models, tmp_path):
    distributed = pytest.importorskip("distributed")
    rules = graft.RuleSet.compile(pipeline="inference")
    single = graft.batch.apply([models], rules, tmp_path / "single")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        report = graft.batch.apply([models], rules, tmp_path / "dask",
                                   executor=client.get_executor())
        workers = client.run(lambda: 1)
    assert len(workers) == 2
    check(report, models)
    s_counts, s_models, s_rules = comparable(single)
    d_counts, d_models, d_rules = comparable(report)
    assert d_counts == s_counts and d_rules == s_rules
    # The same models, statuses, errors and rewrites (outputs under their
    # own folders).
    assert [(m[0], m[2], m[3], m[4], m[5]) for m in d_models] == \
        [(m[0], m[2], m[3], m[4], m[5]) for m in s_models]
    for a in (tmp_path / "single").rglob("*.pb"):
        b = tmp_path / "dask" / a.relative_to(tmp_path / "single")
        assert a.read_bytes() == b.read_bytes()

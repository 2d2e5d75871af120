"""onnxruntime's latency of transformer exports at a working width, before
and after `graft apply --pipeline onnx-transformers`, in one run: OPT,
Falcon, Qwen3, T5's encoder and SigLIP's vision model (export_zoo.py's
architectures at hidden 512, 8 heads, 4 layers, MLP 2048; batch 4 of 128
tokens, or 128 x 128 images) by torch's dynamo exporter, static shapes;
then BERT, GPT-2 and LLaMA by its TorchScript exporter at opset 17
(`NAME@ts17`), static and dynamic (`NAME@ts17-dynamic`: batch and sequence
named, run at 4 x 128); `NAME@dynamo23` at opset 23 (ONNX's own
Attention, RMSNormalization and RotaryEmbedding); `NAME@hfprefill` and
`NAME@hfdecode` (`-dynamic` too) a causal LM's prefill of 4 x 128 tokens
and its decode of one token each over a KV cache of 128 by transformers'
own exporter. Each also with `--param skip_norms=false` (the
residuals' Adds kept apart from their norms: onnxruntime's CPU kernel of
SkipLayerNormalization is slower than an Add and a LayerNormalization).
Each model runs in onnxruntime with its default session options (its own
graph optimizations on) and 2 intra-op threads: 3 warm-up runs, then the
median of 30. Prints a markdown table: ms before, ms after (and the
ratio), ms after with `skip_norms=false` (and the ratio), and the largest
output difference relative to the largest output.

With `--skip-rules PATTERNS` it measures what those rules are worth: the
pipeline against itself without them (`graft apply --skip-rules`), both
graphs timed together in interleaved rounds (20 rounds of 10 runs each,
the order turned each round), the fastest run, the first quartile and
the median of each, so that the machine's drift falls on both alike.

  .venv/bin/python tests/interop/bench_zoo_latency.py [NAME[@ts17[-dynamic]|@dynamo23],...]
      [--skip-rules 'rotary_*'] [--param skip_norms=false] [--rounds N] [--kv-heads N]

`--kv-heads 2` gives the LLaMA family's models 2 heads of K and V
(grouped-query attention, for `--param grouped_attention=true`).
"""
import argparse
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_zoo  # noqa: E402
import zoo  # noqa: E402
from zoo import ABLATION_HEADER, LATENCY_HEADER, ablation_row, latency_row  # noqa: E402

GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")
WIDTH = dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4, intermediate_size=2048)
# Each architecture's config at the working width (export_zoo.NEWER's names).
WIDE = {
    "opt": dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4, ffn_dim=2048,
                word_embed_proj_dim=512, max_position_embeddings=256),
    "falcon": dict(hidden_size=512, num_attention_heads=8, num_hidden_layers=4),
    "qwen3": dict(WIDTH, head_dim=64, max_position_embeddings=256),
    "t5_encoder": dict(d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_heads=8),
    "siglip_vision": dict(WIDTH, image_size=128, patch_size=8),
    "bert": dict(WIDTH, max_position_embeddings=256),
    "gpt2": dict(n_embd=512, n_head=8, n_layer=4, n_positions=256),
    "llama": dict(WIDTH, max_position_embeddings=256),
}
RUNS = ["opt", "falcon", "qwen3", "t5_encoder", "siglip_vision",
        "bert@ts17", "gpt2@ts17", "llama@ts17", "bert@ts17-dynamic", "gpt2@ts17-dynamic",
        "llama@ts17-dynamic"]



def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="?", default=",".join(RUNS),
                        help="NAME[@ts17[-dynamic]],... (default: all)")
    parser.add_argument("--skip-rules", default="",
                        help="time the pipeline against itself without these rules "
                             "(names or globs, comma separated)")
    parser.add_argument("--param", action="append", default=[],
                        help="a param of the pipeline, name=value (repeatable)")
    parser.add_argument("--rounds", type=int, default=20, help="with --skip-rules")
    parser.add_argument("--kv-heads", type=int, default=0,
                        help="K's and V's heads of the LLaMA family's models (grouped-query "
                             "attention; default: as many as Q's)")
    options = parser.parse_args()
    export_zoo.SEQ, export_zoo.BATCH, export_zoo.IMAGE = 128, 4, 128
    warnings.simplefilter("ignore")
    params = [a for p in options.param for a in ("--param", p)]
    print(ABLATION_HEADER if options.skip_rules else LATENCY_HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        for run in options.runs.split(","):
            name, _, exporter = run.partition("@")
            src = os.path.join(tmp, "model.onnx")
            exporter = exporter or "dynamo"
            dynamic, exporter = exporter.endswith("-dynamic"), exporter.removesuffix("-dynamic")
            config = dict(WIDE[name])
            if options.kv_heads:
                config["num_key_value_heads"] = options.kv_heads
            if exporter in export_zoo.HF_EXPORTERS:
                spec = export_zoo.export_hf(name, exporter, dynamic, src, **config)
                feeds = zoo.feeds({"inputs": spec})
            else:
                model, inputs = export_zoo.build(name, **config)
                export_zoo.write(model, inputs, name, exporter, dynamic, src)
                feeds = {k: v.numpy() for k, v in inputs.items()}
            if options.skip_rules:
                row = ablation_row(run, src, feeds, GRAFT, options.skip_rules, params,
                                   rounds=options.rounds)
            else:
                row = latency_row(run, src, feeds, GRAFT, *params)
            print(row, flush=True)


if __name__ == "__main__":
    main()

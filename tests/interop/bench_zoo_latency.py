"""onnxruntime's latency of transformer exports at a working width, before
and after `graft apply --pipeline onnx-transformers`, in one run: OPT,
Falcon, Qwen3, T5's encoder and SigLIP's vision model (export_zoo.py's
architectures at hidden 512, 8 heads, 4 layers, MLP 2048; batch 4 of 128
tokens, or 128 x 128 images) by torch's dynamo exporter, static shapes;
then BERT, GPT-2 and LLaMA by its TorchScript exporter at opset 17
(`NAME@ts17`), static and dynamic (`NAME@ts17-dynamic`: batch and sequence
named, run at 4 x 128). Each also with `--param skip_norms=false` (the
residuals' Adds kept apart from their norms: onnxruntime's CPU kernel of
SkipLayerNormalization is slower than an Add and a LayerNormalization).
Each model runs in onnxruntime with its default session options (its own
graph optimizations on) and 2 intra-op threads: 3 warm-up runs, then the
median of 30. Prints a markdown table: ms before, ms after (and the
ratio), ms after with `skip_norms=false` (and the ratio), and the largest
output difference relative to the largest output.

  .venv/bin/python tests/interop/bench_zoo_latency.py [NAME[@ts17[-dynamic]],...]
"""
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import export_zoo  # noqa: E402
from zoo import LATENCY_HEADER, latency_row  # noqa: E402

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
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else RUNS
    export_zoo.SEQ, export_zoo.BATCH, export_zoo.IMAGE = 128, 4, 128
    warnings.simplefilter("ignore")
    print(LATENCY_HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        for run in names:
            name, _, exporter = run.partition("@")
            model, inputs = export_zoo.build(name, **WIDE[name])
            src = os.path.join(tmp, "model.onnx")
            exporter = exporter or "dynamo"
            export_zoo.write(model, inputs, name, exporter.removesuffix("-dynamic"),
                             exporter.endswith("-dynamic"), src)
            feeds = {k: v.numpy() for k, v in inputs.items()}
            print(latency_row(run, src, feeds, GRAFT), flush=True)

if __name__ == "__main__":
    main()

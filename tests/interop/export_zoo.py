"""The zoo of real exports: small Hugging Face transformers (random weights
from their configs) and torchvision CNNs, exported by torch's two ONNX
exporters, committed under tests/data/zoo/ so that the tests need no torch.

    scripts/export_zoo.sh              # makes .venv-export, then runs this
    .venv-export/bin/python tests/interop/export_zoo.py [--out DIR] [--only NAME,...]

Each model is written as
    <out>/<model>.<exporter>.<shapes>.onnx
exporter: `dynamo` (torch.onnx.export(..., dynamo=True), the default;
`dynamo23` the same at opset 23, `dynamo16` the same of the model in
float16),
`ts14` / `ts17` (dynamo=False at opset 14 / 17, the TorchScript exporter);
`hf`, `hfprefill`, `hfdecode` (transformers' own exporter: a model's
forward, a causal LM's prefill and its decode over a KV cache; export_hf);
shapes: `static`, or `dynamic` (batch and sequence symbolic; for images,
batch). <out>/MANIFEST.json names the torch, transformers and onnx versions
that wrote them and each file's inputs (name, dtype, shape with symbols as
strings), which the tests read to make feeds.

Widths are small (hidden 64, 4 heads, 2 layers, vocabulary 512) so each file
stays well under 2 MB; the op sequences are those of the full-size models.
"""
import argparse
import os
import sys
import tempfile
import warnings

import torch

from zoo import add_export, read_manifest, write_manifest

SEQ = 8
BATCH = 2
IMAGE = 32


def text_inputs(vocab, mask=True):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (BATCH, SEQ), generator=g)
    if not mask:
        return {"input_ids": ids}
    m = torch.ones(BATCH, SEQ, dtype=torch.int64)
    m[1, SEQ - 3:] = 0  # padding in the second row
    return {"input_ids": ids, "attention_mask": m}


def images(name="pixel_values"):
    """A batch of images, as the model's input `name`."""
    return {name: torch.randn(BATCH, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(0))}


class Hidden(torch.nn.Module):
    """A transformers model returning one tensor (last_hidden_state or logits)."""

    def __init__(self, model, key):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, *args):
        names = self.names
        out = self.model(**dict(zip(names, args)), **self.extra)
        return getattr(out, self.key)


def hf(kind, **over):
    """A transformers model of kind `kind` at the zoo's widths (`over`
    replaces a config's fields: BERT, GPT-2, LLaMA and the NEWER families),
    its output's key and example inputs."""
    import transformers as T
    common = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2,
                  intermediate_size=128)
    if kind == "bert":
        cfg = T.BertConfig(**{**dict(vocab_size=512, max_position_embeddings=64, **common),
                              **over})
        return T.BertModel(cfg, add_pooling_layer=False), "last_hidden_state", text_inputs(512)
    if kind == "roberta":
        cfg = T.RobertaConfig(vocab_size=512, max_position_embeddings=64, **common, **over)
        return T.RobertaModel(cfg, add_pooling_layer=False), "last_hidden_state", text_inputs(512)
    if kind == "distilbert":
        cfg = T.DistilBertConfig(vocab_size=512, max_position_embeddings=64, dim=64, n_heads=4,
                                 n_layers=2, hidden_dim=128, **over)
        return T.DistilBertModel(cfg), "last_hidden_state", text_inputs(512)
    if kind == "gpt2":
        cfg = T.GPT2Config(**{**dict(vocab_size=512, n_positions=64, n_embd=64, n_head=4,
                                     n_layer=2, bos_token_id=0, eos_token_id=0,
                                     use_cache=False), **over})
        return T.GPT2Model(cfg), "last_hidden_state", text_inputs(512)
    if kind == "llama":
        cfg = T.LlamaConfig(**{**dict(vocab_size=512, max_position_embeddings=64,
                                      num_key_value_heads=2, use_cache=False, **common), **over})
        return T.LlamaModel(cfg), "last_hidden_state", text_inputs(512)
    if kind == "qwen2":
        cfg = T.Qwen2Config(vocab_size=512, max_position_embeddings=64, num_key_value_heads=2,
                            use_cache=False, **common, **over)
        return T.Qwen2Model(cfg), "last_hidden_state", text_inputs(512)
    if kind == "electra":
        cfg = T.ElectraConfig(vocab_size=512, embedding_size=64, max_position_embeddings=64,
                              **common, **over)
        return T.ElectraModel(cfg), "last_hidden_state", text_inputs(512)
    if kind == "albert":
        cfg = T.AlbertConfig(vocab_size=512, embedding_size=32, max_position_embeddings=64,
                             **common, **over)
        return T.AlbertModel(cfg, add_pooling_layer=False), "last_hidden_state", text_inputs(512)
    if kind == "mpnet":
        cfg = T.MPNetConfig(vocab_size=512, max_position_embeddings=64, **common, **over)
        return T.MPNetModel(cfg, add_pooling_layer=False), "last_hidden_state", text_inputs(512)
    if kind == "xlm_roberta":
        cfg = T.XLMRobertaConfig(vocab_size=512, max_position_embeddings=64, **common, **over)
        return (T.XLMRobertaModel(cfg, add_pooling_layer=False), "last_hidden_state",
                text_inputs(512))
    if kind == "gpt_neo":
        cfg = T.GPTNeoConfig(vocab_size=512, max_position_embeddings=64, hidden_size=64,
                             num_heads=4, num_layers=2, attention_types=[[["global", "local"], 1]],
                             use_cache=False, **over)
        return T.GPTNeoModel(cfg), "last_hidden_state", text_inputs(512)
    if kind in ("mistral", "phi3", "gemma"):
        config = {"mistral": T.MistralConfig, "phi3": T.Phi3Config, "gemma": T.GemmaConfig}[kind]
        model = {"mistral": T.MistralModel, "phi3": T.Phi3Model, "gemma": T.GemmaModel}[kind]
        extra = {"phi3": {"pad_token_id": 0}, "gemma": {"head_dim": 16}}.get(kind, {})
        cfg = config(vocab_size=512, max_position_embeddings=64, num_key_value_heads=2,
                     use_cache=False, **common, **extra, **over)
        return model(cfg), "last_hidden_state", text_inputs(512)
    if kind == "deit":
        cfg = T.DeiTConfig(image_size=IMAGE, patch_size=8, **common, **over)
        return T.DeiTModel(cfg, add_pooling_layer=False), "last_hidden_state", images()
    if kind == "vit":
        cfg = T.ViTConfig(image_size=IMAGE, patch_size=8, **common, **over)
        return T.ViTModel(cfg, add_pooling_layer=False), "last_hidden_state", images()
    if kind == "clip_text":
        cfg = T.CLIPTextConfig(vocab_size=512, max_position_embeddings=64, **common,
                               hidden_act="quick_gelu", **over)
        return T.CLIPTextModel(cfg), "last_hidden_state", text_inputs(512)
    if kind in NEWER:
        config, model, extra = NEWER[kind]
        cfg = getattr(T, config)(**{**extra, **over})
        if kind in ("dinov2", "siglip_vision"):
            return getattr(T, model)(cfg), "last_hidden_state", images()
        return getattr(T, model)(cfg), "last_hidden_state", text_inputs(512)
    raise ValueError(kind)


_WIDTHS = dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
               vocab_size=512, max_position_embeddings=64)
_DECODER = dict(_WIDTHS, num_key_value_heads=2, use_cache=False)
# Families of 2025-26 checkpoints: (config class, model class, config).
NEWER = {
    "qwen3": ("Qwen3Config", "Qwen3Model", dict(_DECODER, head_dim=16)),
    "smollm3": ("SmolLM3Config", "SmolLM3Model", dict(_DECODER, pad_token_id=0)),
    "granite": ("GraniteConfig", "GraniteModel", _DECODER),
    "olmo2": ("Olmo2Config", "Olmo2Model", dict(_DECODER, pad_token_id=0)),
    "gemma3": ("Gemma3TextConfig", "Gemma3TextModel", dict(_DECODER, head_dim=16,
                                                           sliding_window=4)),
    "phi": ("PhiConfig", "PhiModel", dict(_WIDTHS, use_cache=False)),
    "stablelm": ("StableLmConfig", "StableLmModel", dict(_DECODER)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXModel", dict(_WIDTHS, use_cache=False)),
    "falcon": ("FalconConfig", "FalconModel", dict(hidden_size=64, num_attention_heads=4,
                                                   num_hidden_layers=2, vocab_size=512,
                                                   use_cache=False)),
    "opt": ("OPTConfig", "OPTModel", dict(hidden_size=64, num_attention_heads=4,
                                          num_hidden_layers=2, ffn_dim=128, vocab_size=512,
                                          max_position_embeddings=64, word_embed_proj_dim=64,
                                          use_cache=False, pad_token_id=1)),
    "modernbert": ("ModernBertConfig", "ModernBertModel", dict(_WIDTHS, pad_token_id=0,
                                                               local_attention=4)),
    "t5_encoder": ("T5Config", "T5EncoderModel", dict(d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                      num_heads=4, vocab_size=512)),
    "bart": ("BartConfig", "BartModel", dict(d_model=64, encoder_layers=2, decoder_layers=2,
                                             encoder_attention_heads=4,
                                             decoder_attention_heads=4, encoder_ffn_dim=128,
                                             decoder_ffn_dim=128, vocab_size=512,
                                             max_position_embeddings=64, use_cache=False)),
    "dinov2": ("Dinov2Config", "Dinov2Model", dict(hidden_size=64, num_attention_heads=4,
                                                   num_hidden_layers=2, mlp_ratio=2,
                                                   image_size=IMAGE, patch_size=8)),
    "siglip_vision": ("SiglipVisionConfig", "SiglipVisionModel", dict(
        hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
        image_size=IMAGE, patch_size=8)),
}


def vision(kind):
    import torchvision
    factory, options = CNNS[kind]
    model = getattr(torchvision.models, factory)(weights=None, num_classes=10, **options)
    # Batch-norm statistics that are not the identity, so a wrong fold shows.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model, None, images("x")


TEXT = ["bert", "roberta", "distilbert", "gpt2", "llama", "qwen2", "vit", "clip_text"]
# More architectures, by the dynamo exporter and TorchScript's at opset 17.
MORE = ["electra", "albert", "mpnet", "xlm_roberta", "gpt_neo", "mistral", "phi3", "gemma",
        "deit"]
# torchvision CNNs at widths that keep each file under 2 MB.
CNNS = {"mobilenet_v2": ("mobilenet_v2", {"width_mult": 0.35}),
        "shufflenet_v2": ("shufflenet_v2_x0_5", {})}
EXPORTERS = ["dynamo", "ts14", "ts17"]


def build(name, **over):
    """The model `name` (a transformers config's fields replaced by `over`)
    and its example inputs."""
    torch.manual_seed(0)
    if name in CNNS:
        model, key, inputs = vision(name)
    else:
        model, key, inputs = hf(name, **over)
        model.config.use_cache = False
    # Configs initialise biases to 0 and norm weights to 1, which exporters
    # then share as one initializer: perturb every parameter so that each
    # weight is its own and a wrong fusion changes the numbers.
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    model.eval()
    if key is None:
        wrapped = model
    else:
        wrapped = Hidden(model, key)
        wrapped.names = list(inputs)
        wrapped.extra = ({"use_cache": False}
                         if name in ("gpt2", "llama", "qwen2", "mistral", "phi3", "gemma")
                         or "use_cache" in NEWER.get(name, ("", "", {}))[2] else {})
        wrapped.eval()
    return wrapped, inputs


def symbolic(name, inputs, dynamic):
    """Input shapes as the manifest writes them: ints, or symbol names."""
    shapes = {}
    for k, v in inputs.items():
        dims = list(v.shape)
        if dynamic:
            dims = ["batch"] + (["sequence"] if v.dim() == 2 else dims[1:])
        shapes[k] = dims
    return shapes


def export(name, exporter, dynamic, path):
    if exporter in HF_EXPORTERS:
        return export_hf(name, exporter, dynamic, path)
    model, inputs = build(name)
    return write(model, inputs, name, exporter, dynamic, path)


# transformers' own ONNX exporter (transformers.exporters.OnnxExporter: torch's
# dynamo exporter with transformers' patches and graph fixes): `hf` exports
# a model's forward whole (the HF list); `hfprefill` and `hfdecode` a causal
# LM's two graphs for generation (export_for_generation, HF_GENERATION): the
# prompt, and one token over a KV cache (the past keys and values inputs,
# the present ones outputs).
HF_EXPORTERS = ["hf", "hfprefill", "hfdecode"]
HF = ["bert", "vit", "gpt2", "llama"]
HF_GENERATION = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM",
                 "gemma3": "Gemma3ForCausalLM"}


def export_hf(name, exporter, dynamic, path, **over):
    """`name` (its config's fields replaced by `over`) exported by
    transformers' exporter to `path`, its weights inline; the inputs' shapes
    as fed (the exporter names even fixed sizes as symbols where dynamic,
    so the shapes are those it was traced at)."""
    import onnx
    import transformers as T
    from transformers.exporters import OnnxConfig, OnnxExporter
    torch.manual_seed(0)
    model, _, inputs = hf(name, **over)
    if exporter != "hf":  # the causal LM of the same config, with its cache
        model.config.use_cache = True
        model = getattr(T, HF_GENERATION[name])(model.config)
        # a prompt padded on the left, as generation pads a batch
        inputs = dict(inputs)
        inputs["attention_mask"] = torch.ones_like(inputs["attention_mask"])
        inputs["attention_mask"][1, :3] = 0
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    model.eval()
    config = OnnxConfig(dynamic=dynamic)
    with tempfile.TemporaryDirectory() as folder:
        if exporter == "hf":
            exported = OnnxExporter().export(model, inputs, config)
            part = "model"
        else:
            exported = OnnxExporter().export_for_generation(model, inputs, config)
            part = exporter[2:]
        exported.save_pretrained(folder)
        onnx_model = onnx.load(os.path.join(folder, part + ".onnx"))  # its data read in
        onnx.save(onnx_model, path)
    # the shapes traced: those a static export declares (the static export
    # beside it, which the zoo writes first, else one made for them)
    static = path.replace(".dynamic.onnx", ".static.onnx")
    if not dynamic:
        traced = onnx.load(path)
    elif os.path.exists(static) and static != path and not over:
        traced = onnx.load(static)
    else:
        with tempfile.TemporaryDirectory() as folder:
            export_hf(name, exporter, False, os.path.join(folder, "static.onnx"), **over)
            traced = onnx.load(os.path.join(folder, "static.onnx"))
    types = {onnx.TensorProto.INT64: "int64", onnx.TensorProto.FLOAT: "float32",
             onnx.TensorProto.INT32: "int32"}
    spec = {i.name: {"dtype": types[i.type.tensor_type.elem_type],
                     "shape": [d.dim_value for d in i.type.tensor_type.shape.dim]}
            for i in traced.graph.input}
    # a sliding-window cache's window (Gemma 3's layers), fed as it was traced
    for input_name, s in spec.items():
        if input_name.endswith("._sliding_window_tensor"):
            s["value"] = model.config.sliding_window
    return spec


def write(model, inputs, name, exporter, dynamic, path):
    """`model` (export `name`'s, built with `inputs`) exported to `path` by
    `exporter` (`dynamo`, `dynamo16`, `dynamo23`, `ts14`, `ts17`), batch and
    sequence named when `dynamic`; the inputs' shapes as the manifest
    writes them."""
    if exporter == "dynamo16":  # the model and its float inputs in float16
        model = model.half()
        inputs = {k: v.half() if v.is_floating_point() else v for k, v in inputs.items()}
    args = tuple(inputs.values())
    names = list(inputs)
    with torch.no_grad():
        if exporter.startswith("dynamo"):
            # `dynamo23`: at opset 23 (standard Attention, RMSNormalization and
            # RotaryEmbedding ops); `dynamo`, `dynamo16`: at the exporter's default
            kwargs = {"opset_version": 23} if exporter == "dynamo23" else {}
            if dynamic:
                batch = torch.export.Dim("batch", min=1, max=64)
                seq = torch.export.Dim("sequence", min=2, max=64)
                shapes = tuple({0: batch, 1: seq} if v.dim() == 2 else {0: batch} for v in args)
                # A transformers model is wrapped in forward(*args); a CNN takes x.
                kwargs["dynamic_shapes"] = shapes if name in CNNS else {"args": shapes}
            torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                              dynamo=True, external_data=False, optimize=True, **kwargs)
        else:
            opset = int(exporter[2:])
            axes = None
            if dynamic:
                axes = {k: ({0: "batch", 1: "sequence"} if v.dim() == 2 else {0: "batch"})
                        for k, v in inputs.items()}
                axes["output"] = {0: "batch", 1: "sequence"} if name not in CNNS else {0: "batch"}
            extra = {}
            if name in CNNS:
                extra["training"] = torch.onnx.TrainingMode.PRESERVE
                extra["do_constant_folding"] = False
            torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                              opset_version=opset, dynamo=False, dynamic_axes=axes, **extra)
    return {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": s}
            for (k, v), s in zip(inputs.items(), symbolic(name, inputs, dynamic).values())}


def export_llm(folder, layers):
    """An LLM past ONNX's 2 GiB limit, as users export one: a LLaMA of
    TinyLlama's widths (hidden 2048, 32 heads over 4 key/value heads, MLP
    5632, vocabulary 32000) with `layers` layers and random weights, by the
    dynamo exporter with dynamic batch and sequence, its weights in
    model.onnx.data beside model.onnx (not committed: bench_onnx_llm.py
    --export reads it)."""
    import transformers as T
    torch.manual_seed(0)
    cfg = T.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                        num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=4,
                        max_position_embeddings=2048, use_cache=False)
    model = T.LlamaModel(cfg).eval()
    wrapped = Hidden(model, "last_hidden_state")
    wrapped.names, wrapped.extra = ["input_ids", "attention_mask"], {"use_cache": False}
    ids = torch.randint(0, 32000, (1, 64), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(1, 64, dtype=torch.int64)
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("sequence", min=2, max=2048)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(wrapped, (ids, mask), path, input_names=wrapped.names,
                          output_names=["output"], dynamo=True, external_data=True,
                          dynamic_shapes={"args": ({0: batch, 1: seq}, {0: batch, 1: seq})})
    strip_provenance_external(path)
    return path


def strip_provenance_external(path):
    """strip_provenance for a model whose weights stay in their data file."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", metavar="FOLDER",
                        help="instead: export the LLM past 2 GiB into FOLDER (export_llm)")
    parser.add_argument("--llm-layers", type=int, default=12)
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "data", "zoo"))
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--shapes", default="static,dynamic")
    args = parser.parse_args()
    if args.llm:
        path = export_llm(args.llm, args.llm_layers)
        size = sum(os.path.getsize(os.path.join(args.llm, f)) for f in os.listdir(args.llm))
        print(f"{path}: {size / 2**30:.2f} GiB")
        return 0
    os.makedirs(args.out, exist_ok=True)
    import onnx
    import transformers
    manifest = read_manifest(args.out)
    manifest.setdefault("versions", {}).update(
        {"torch": torch.__version__, "transformers": transformers.__version__,
         "onnx": onnx.__version__})
    names = [n for n in args.only.split(",") if n] or TEXT + list(CNNS)
    warnings.simplefilter("ignore")
    failed = []
    for name in names:
        for exporter in args.exporters.split(","):
            for dynamic in [s == "dynamic" for s in args.shapes.split(",")]:
                base = f"{name}.{exporter}.{'dynamic' if dynamic else 'static'}"
                path = os.path.join(args.out, base + ".onnx")
                add_export(manifest, failed, base, path, lambda: {
                    "model": name, "exporter": exporter, "dynamic": dynamic,
                    "inputs": export(name, exporter, dynamic, path)})
    return write_manifest(args.out, manifest, failed)


if __name__ == "__main__":
    sys.exit(main())

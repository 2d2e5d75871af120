"""Test inputs for the rule files' test blocks, cut from the zoo's real
exports (tests/data/zoo/, export_zoo.py) with onnx.utils.extract_model:
each is the part of an exported model between the named values, written
as text (.onnxtxt) beside the other ONNX test inputs.

    .venv/bin/python tests/data/make_zoo_cuts.py [NAME ...]

With names, only those cuts are made (a rewritten cut reads its source's
file as it is).
"""
import os
import re
import subprocess
import sys
import tempfile

import onnx
import onnx.utils
from google.protobuf import text_format

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "zoo")
OUT = os.path.join(HERE, "onnx")

# name: (zoo model, input values, output values)
CUTS = {
    # TorchScript's erf GELU with its scalars as Constant nodes
    "zoo_constants": ("bert.ts14.static", ["/model/encoder/layer.0/intermediate/dense/Add_output_0"],
                      ["/model/encoder/layer.0/intermediate/intermediate_act_fn/Mul_1_output_0"]),
    # LLaMA's RMSNorm as TorchScript writes it: float-to-float Casts, Div(1, Sqrt)
    "zoo_rms_norm_ts": ("llama.ts17.static", ["/model/layers.0/Add_output_0"],
                        ["/model/layers.0/post_attention_layernorm/Mul_1_output_0"]),
    # BERT's residual + bias before the LayerNormalization op (dynamo)
    "zoo_skip_layer_norm_op": ("bert.dynamo.static", ["val_119", "layer_norm"], ["layer_norm_1"]),
    # GPT-Neo's MLP output and its bias, the residual read first (dynamo)
    "zoo_skip_bias_second": ("gpt_neo.dynamo.static", ["add_5", "val_99"], ["layer_norm_2"]),
    # the bias Add before the Gelu op (opset 20, dynamo)
    "zoo_bias_gelu_op": ("bert.dynamo.static", ["val_123"], ["gelu"]),
    # BERT's self-attention as dynamo decomposes scaled dot-product attention
    "zoo_sdpa_static": ("bert.dynamo.static", ["linear", "linear_1", "linear_2", "val_101"],
                        ["view_4"]),
    # the same from the layer's input: Q, K and V projections of one tensor
    "zoo_attention_packed": ("bert.dynamo.static", ["layer_norm", "val_101"], ["view_4"]),
    # the same with dynamic batch and sequence: Reshape targets from Shape ops
    "zoo_sdpa_dynamic": ("bert.dynamo.dynamic",
                         ["input_ids", "linear", "linear_1", "linear_2", "val_102"], ["view_4"]),
    # LLaMA's self-attention (dynamo): Q and K rotated, K and V repeated for
    # grouped-query attention; static shapes fold the repeat into K^T's view
    "zoo_sdpa_gqa_static": ("llama.dynamo.static", ["linear", "linear_1", "linear_2", "val_151"],
                            ["view_4"]),
    # ... at opset 23: ONNX's Attention over K and V repeated to Q's heads
    "zoo_attention23_gqa_static": ("llama.dynamo23.static",
                                   ["add_4", "add_5", "transpose_2", "bitwise_and_1"],
                                   ["scaled_dot_product_attention"]),
    "zoo_attention23_gqa_dynamic": ("llama.dynamo23.dynamic",
                                    ["input_ids", "add_4", "add_5", "transpose_2",
                                     "bitwise_and_1"],
                                    ["scaled_dot_product_attention"]),
    "zoo_sdpa_gqa_dynamic": ("llama.dynamo.dynamic",
                             ["input_ids", "linear", "linear_1", "linear_2", "unsqueeze_14",
                              "unsqueeze_15", "val_153"], ["view_4"]),
    # transformers' own exporter: BERT's attention, the rows whose mask keeps
    # no key zeroed after the context
    "zoo_sdpa_rows_filled": ("bert.hf.static", ["linear", "linear_1", "linear_2",
                                                "bitwise_and_1"], ["view_4"]),
    # ... LLaMA's prefill (its present K and V heads the cache's outputs)
    "zoo_attention_rows_filled": ("llama.hfprefill.static",
                                  ["add_3", "past_key_values.layers.0.keys",
                                   "past_key_values.layers.0.values", "bitwise_and_1"],
                                  ["view_6"]),
    # ... GPT-2's decode over a KV cache (dynamic shapes): the past's keys
    # and the new one joined, returned as the present cache, against a mask
    # of the input's length
    "zoo_attention_cache_keys": ("gpt2.hfdecode.dynamic",
                                 ["input_ids", "input.past_key_values.layers.0.keys",
                                  "input.past_key_values.layers.0.values", "transpose",
                                  "transpose_1", "transpose_2", "expand"],
                                 ["view_9", "output.past_key_values.layers.0.keys",
                                  "output.past_key_values.layers.0.values"]),
    # ... LLaMA's (dynamic shapes): K's and V's heads repeated to Q's after
    # the join, the past's length plus one read off another layer's past
    "zoo_sdpa_gqa_cache": ("llama.hfdecode.dynamic",
                           ["position_ids", "input.past_key_values.layers.0.keys",
                            "input.past_key_values.layers.0.values",
                            "input.past_key_values.layers.1.values", "add_13", "add_14",
                            "transpose_2", "expand"],
                           ["view_6", "output.past_key_values.layers.0.keys",
                            "output.past_key_values.layers.0.values"]),
    # ... LLaMA's Q and K rotated by tables computed from position_ids, an
    # input (prefill)
    "zoo_rotary_positions": ("llama.hfprefill.static", ["position_ids", "transpose",
                                                        "transpose_1"],
                             ["add_3", "past_key_values.layers.0.keys"]),
    # ... and through attention, from Q's, K's and V's rows (prefill: K's
    # and V's heads the present cache)
    "zoo_rotary_attention": ("llama.hfprefill.static",
                             ["position_ids", "linear", "linear_1", "linear_2", "bitwise_and_1"],
                             ["view_6", "past_key_values.layers.0.keys",
                              "past_key_values.layers.0.values"]),
    # ... Qwen3's, Q's and K's heads normed before the rotation
    "zoo_rotary_normed_attention": ("qwen3.hfprefill.static",
                                    ["position_ids", "linear", "linear_1", "linear_2",
                                     "bitwise_and_1"],
                                    ["view_6", "past_key_values.layers.0.keys",
                                     "past_key_values.layers.0.values"]),
    # Gemma 3's norms of Q's and K's heads after the heads' transpose
    # (transformers' exporter, prefill), its weights 1 + w
    "zoo_rms_norm_heads": ("gemma3.hfprefill.static", ["linear", "linear_1"],
                           ["mul_7", "mul_9"]),
    # GPT-2's attention (dynamo, static): Q, K and V split from one
    # projection with its bias
    "zoo_attention_packed_bias": ("gpt2.dynamo.static", ["layer_norm", "bitwise_and_1"],
                                  ["view_9"]),
    # ... GPT-2's prefill: K's and V's heads the present cache
    "zoo_attention_heads_returned": ("gpt2.hfprefill.static",
                                     ["split_split_0", "split_split_1", "split_split_2",
                                      "bitwise_and_1"],
                                     ["view_9", "past_key_values.layers.0.keys",
                                      "past_key_values.layers.0.values"]),
    # ... GPT-2's tied embedding, read by the tokens' Gather and, transposed,
    # by the LM head
    "zoo_tied_lm_head": ("gpt2.hfdecode.static", ["view", "view_28"], ["embedding", "logits"]),
    # LLaMA's Q and K rotated by tables computed from the positions (dynamo,
    # dynamic shapes)
    "zoo_rotary_computed": ("llama.dynamo.dynamic", ["input_ids", "linear", "linear_1"],
                            ["add_4", "add_5"]),
    # ... in float16: the tables computed in float32, cast to float16
    "zoo_rotary_computed_fp16": ("llama.dynamo16.dynamic", ["input_ids", "linear", "linear_1"],
                                 ["add_4", "add_5"]),
    # ... and as TorchScript computes them (dynamic shapes): the positions
    # unsqueezed twice, the tables times an attention scaling of 1
    "zoo_rotary_computed_ts": ("llama.ts17.dynamic",
                               ["/model/embed_tokens/Gather_output_0",
                                "/model/layers.0/self_attn/q_proj/MatMul_output_0",
                                "/model/layers.0/self_attn/k_proj/MatMul_output_0"],
                               ["/model/layers.0/self_attn/Add_output_0",
                                "/model/layers.0/self_attn/Add_1_output_0"]),
    # ... at opset 23 (dynamic shapes): the standard RotaryEmbedding over
    # tables of one row for the whole batch
    "zoo_rotary_batch_tables": ("llama.dynamo23.dynamic", ["input_ids", "linear", "linear_1"],
                                ["add_4", "add_5"]),
    # the same as constant tables [1, 1, S, h] (dynamo, static shapes)
    "zoo_rotary_table": ("llama.dynamo.static", ["linear", "linear_1"], ["add_4", "add_5"]),
    # ... and as cos / sin of constant angles (TorchScript, static shapes)
    "zoo_rotary_angles": ("llama.ts17.static",
                          ["/model/layers.0/self_attn/q_proj/MatMul_output_0",
                           "/model/layers.0/self_attn/k_proj/MatMul_output_0"],
                          ["/model/layers.0/self_attn/Add_output_0",
                           "/model/layers.0/self_attn/Add_1_output_0"]),
    # Phi-3's: Q, K and V sliced from one projection, the context reshaped
    # to its own shape before its heads are merged
    "zoo_sdpa_gqa_phi3": ("phi3.dynamo.dynamic",
                          ["input_ids", "linear", "unsqueeze_14", "unsqueeze_15", "val_205"],
                          ["view_4"]),
    # MPNet's attention scores over sqrt(d) (dynamo; its relative position
    # bias after them)
    "zoo_fused_matmul_scale": ("mpnet.dynamo.static", ["transpose", "transpose_3"], ["div_2"]),
    # GPT-Neo's unscaled Q K^T, K^T a Transpose of its last two axes
    # (TorchScript, dynamic shapes)
    "zoo_fused_matmul_transpose": ("gpt_neo.ts17.dynamic",
                                   ["/model/h.0/attn/attention/Cast_output_0",
                                    "/model/h.0/attn/attention/Cast_1_output_0"],
                                   ["/model/h.0/attn/attention/MatMul_output_0"]),
    # DistilBERT's word and position embeddings and their norm (TorchScript, opset 17)
    "zoo_embed_layer_norm": ("distilbert.ts17.static", ["input_ids"],
                             ["/model/embeddings/LayerNorm/LayerNormalization_output_0"]),
    # the same at opset 14: the norm decomposed (its scalars as Constant
    # nodes: the test reads the _init cut below)
    "zoo_embed_layer_norm_opset14": ("distilbert.ts14.static", ["input_ids"],
                                     ["/model/embeddings/LayerNorm/Add_1_output_0"]),
    # Gemma's gelu_pytorch_tanh (TorchScript): x^3 as x * (x * x), the half last
    "zoo_fast_gelu_cubed": ("gemma.ts17.static", ["/model/layers.0/mlp/gate_proj/MatMul_output_0"],
                            ["/model/layers.0/mlp/act_fn/Mul_5_output_0"]),
    # BERT's query split into heads by a target computed from the hidden
    # states' Shape (TorchScript, dynamic shapes)
    "zoo_view_target": ("bert.ts17.dynamic",
                        ["/model/embeddings/LayerNorm/LayerNormalization_output_0"],
                        ["/model/encoder/layer.0/attention/self/Reshape_output_0"]),
    # BERT's mask flattened, gathered and viewed by shape arithmetic over
    # the mask's known shape (TorchScript, static shapes)
    "zoo_shape_arithmetic": ("bert.ts17.static", ["attention_mask"], ["/model/Reshape_1_output_0"]),
    # MobileNetV2's first convs and ReLU6s (dynamo; ranges beside it, by hand)
    "zoo_qdq_relu6": ("mobilenet_v2.dynamo.static", ["x"], ["getitem_6"]),
    # BERT's token embeddings: a Gather from the table by the ids (dynamo)
    "zoo_embedding": ("bert.dynamo.static", ["input_ids"], ["embedding"]),
    # GPT-2's LM head reading its tied embedding transposed (transformers'
    # exporter, the decode graph)
    "zoo_lm_head_tied": ("gpt2.hfdecode.static", ["view_28"], ["logits"]),
    # ViT's patch embedding: a conv with a bias (dynamo)
    "zoo_patch_embedding": ("vit.dynamo.static", ["pixel_values"], ["conv2d"]),
    # ShuffleNetV2's channel shuffle: a Concat viewed, transposed, viewed
    # back and split in two (dynamo; ranges by make_onnx_quantize.py)
    "zoo_qdq_shuffle": ("shufflenet_v2.dynamo.static", ["relu_1", "relu_3"],
                        ["relu_5", "view_2"]),
    # MPNet's relative position buckets, computed from constant positions
    # (TorchScript, static shapes)
    # (its first value, a Constant node's, is cut as an input and made the
    # initializer it was: FROZEN below)
    "zoo_constant_folding": ("mpnet.ts17.static", ["/model/encoder/Constant_output_0"],
                             ["/model/encoder/relative_attention_bias/Gather_output_0"]),
    # GPT-2's Conv1D: rows flattened around a Gemm (dynamo)
    "zoo_fully_connected": ("gpt2.dynamo.static", ["layer_norm"], ["view_3"]),
    # ... at opset 23 (blocked DequantizeLinear and int4 need 21)
    "zoo_fully_connected23": ("gpt2.dynamo23.static", ["layer_norm"], ["view_3"]),
    # LLaMA's MLP at opset 23: gate, up and down projections (dynamo)
    "zoo_llama_mlp23": ("llama.dynamo23.static", ["mul_10"], ["linear_6"]),
    # MobileNetV2's first convs and the batch norms TorchScript keeps
    # (training=PRESERVE, opset 17)
    "zoo_conv_bn": ("mobilenet_v2.ts17.static", ["x"],
                    ["/features/features.1/conv/conv.2/BatchNormalization_output_0"]),
    # ViT's first self-attention as TorchScript writes it (no mask), from the
    # model's input (the export declares no shapes inside)
    "zoo_attention_eager": ("vit.ts17.static", ["pixel_values"],
                            ["/model/layers.0/attention/Reshape_4_output_0"]),
    # BERT's self-attention as TorchScript writes it: the attention mask made
    # a bias of 0 and -inf, the rows it masks whole zeroed after the softmax
    "zoo_attention_eager_masked": ("bert.ts17.static",
                                   ["/model/encoder/layer.0/attention/self/query/Add_output_0",
                                    "/model/encoder/layer.0/attention/self/key/Add_output_0",
                                    "/model/encoder/layer.0/attention/self/value/Add_output_0",
                                    "attention_mask"],
                                   ["/model/encoder/layer.0/attention/self/Reshape_4_output_0"]),
    # LLaMA's (TorchScript): Q and K rotated after the head split, K and V
    # repeated for grouped-query attention, K^T one Transpose
    "zoo_attention_eager_heads": ("llama.ts17.static",
                                  ["/model/layers.0/self_attn/Add_output_0",
                                   "/model/layers.0/self_attn/Add_1_output_0",
                                   "/model/layers.0/self_attn/Transpose_2_output_0",
                                   "attention_mask"],
                                  ["/model/layers.0/self_attn/Reshape_6_output_0"]),
    # GPT-Neo's self-attention (dynamo): no scale, its causal mask a Where
    # to the float minimum, then the padding mask's bias
    "zoo_attention_causal_where": ("gpt_neo.dynamo.static",
                                   ["linear", "linear_1", "linear_2", "attention_mask"],
                                   ["view_3"]),
    # MPNet's (TorchScript): the scores divided by sqrt(d), its relative
    # position bias added, then the padding mask's bias
    "zoo_attention_position_bias": ("mpnet.ts17.static",
                                    ["/model/encoder/layer.0/attention/attn/q/Add_output_0",
                                     "/model/encoder/layer.0/attention/attn/k/Add_output_0",
                                     "/model/encoder/layer.0/attention/attn/v/Add_output_0",
                                     "attention_mask"],
                                    ["/model/encoder/layer.0/attention/attn/Reshape_3_output_0"]),
    # T5's K heads transposed for their length alone (read by the position
    # bias), beside the K^T of its first attention (TorchScript, dynamic)
    "zoo_shape_of_transpose": ("t5_encoder.ts17.dynamic",
                               ["/model/encoder/block.0/layer.0/layer_norm/Mul_1_output_0"],
                               ["/model/encoder/block.0/layer.0/SelfAttention/Gather_2_output_0",
                                "/model/encoder/block.0/layer.0/SelfAttention/MatMul_output_0"]),
    # GPT-Neo's self-attention (TorchScript, dynamic shapes): its causal
    # mask its buffer cut to the sequence (a length the shapes know as
    # min(64, S)), then the padding mask's bias
    "zoo_attention_causal_slice": ("gpt_neo.ts17.dynamic",
                                   ["input_ids", "/model/wte/Gather_output_0", "attention_mask",
                                    "/model/h.0/attn/attention/q_proj/MatMul_output_0",
                                    "/model/h.0/attn/attention/k_proj/MatMul_output_0",
                                    "/model/h.0/attn/attention/v_proj/MatMul_output_0"],
                                   ["/model/h.0/attn/attention/Reshape_3_output_0"]),
    # BERT's embeddings (TorchScript, dynamic shapes): the positions' cut to
    # the sequence from the position ids' buffer, added to the tokens'
    "zoo_skip_layer_norm_positions": ("bert.ts17.dynamic",
                                      ["input_ids", "/model/embeddings/Add_output_0"],
                                      ["/model/embeddings/LayerNorm/LayerNormalization_output_0"]),
    # CLIP's quick_gelu (dynamo)
    "zoo_quick_gelu": ("clip_text.dynamo.static", ["linear_4"], ["mul_1"]),
    # OPT's self-attention (dynamo): Q scaled before its heads split, so no
    # scale after; the mask's NaN fill after the softmax
    "zoo_sdpa_prescaled": ("opt.dynamo.static", ["mul_1", "linear_1", "linear_2", "val_86"],
                           ["view_5"]),
    # the same from the layer's input
    "zoo_attention_prescaled": ("opt.dynamo.static", ["layer_norm", "val_86"], ["view_5"]),
    # SigLIP's (dynamo): no mask, so no bias and no NaN fill
    "zoo_sdpa_no_mask": ("siglip_vision.dynamo.static", ["linear", "linear_1", "linear_2"],
                         ["view_5"]),
    # T5's (dynamo): no scale, a float bias (relative positions and mask), no NaN fill
    "zoo_sdpa_unscaled": ("t5_encoder.dynamo.static",
                          ["linear", "linear_1", "linear_2", "where_1"], ["view_4"]),
    # BART's first cross-attention (dynamo): Q from the decoder, K and V
    # from the encoder's output
    "zoo_cross_attention": ("bart.dynamo.static", ["layer_norm_6", "layer_norm_4", "val_130"],
                            ["view_19"]),
    # Falcon's multi-query attention (dynamo): one head of K and V broadcast
    # over Q's rotated heads
    "zoo_sdpa_multi_query": ("falcon.dynamo.static",
                             ["add_3", "add_4", "transpose_2", "val_157"], ["view_5"]),
    # LLaMA's residual and RMSNorm in float16, computed in float32 between
    # two Casts (dynamo)
    "zoo_skip_rms_norm_float16": ("llama.dynamo16.static", ["embedding", "linear_3"],
                                  ["mul_10"]),
    # GPT-2's tanh GELU in float16: its constants rounded to float16 (dynamo)
    "zoo_fast_gelu_float16": ("gpt2.dynamo16.static", ["view_12"], ["mul_3"]),
    # LLaMA's residual before the RMSNormalization op (dynamo, opset 23)
    "zoo_skip_rms_norm_op": ("llama.dynamo23.static", ["embedding", "linear_3"], ["mul_10"]),
    # GPT-2's Conv1D, its rows' view back to [batch, sequence, N] computed
    # from the ids' Shape (dynamo, dynamic shapes)
    "zoo_fully_connected_dynamic": ("gpt2.dynamo.dynamic", ["input_ids", "layer_norm"],
                                    ["view_3"]),
    # ModernBERT's residual before a LayerNormalization without beta (dynamo)
    "zoo_skip_layer_norm_no_beta": ("modernbert.dynamo.static", ["layer_norm", "linear_1"],
                                    ["layer_norm_1"]),
    # Keras 3's exports (KerasHub, tf2onnx; export_zoo_keras.py): BERT's
    # norm after its attention's residual, in the moments form
    "zoo_skip_layer_norm_keras": (
        "bert.keras.dynamic",
        ["bert_backbone_1/transformer_layer_0_1/self_attention_layer_1/attention_output_1/BiasAdd:0",
         "bert_backbone_1/embeddings_layer_norm_1/add_2:0"],
        ["bert_backbone_1/transformer_layer_0_1/self_attention_layer_norm_1/add_2:0"]),
    # ... its embeddings' norm at opset 17
    "zoo_layer_norm_keras17": ("bert.keras17.dynamic", ["bert_backbone_1/embeddings_add_1/Add_1:0"],
                               ["bert_backbone_1/embeddings_layer_norm_1/add_2:0"]),
    # LLaMA's norm after its attention's residual (the attention's output
    # as input 0 of the residual Add: tf2onnx's names of it change from run
    # to run)
    "zoo_rms_norm_keras": (
        "llama.keras.dynamic",
        ["llama_backbone_1/transformer_layer_0_1/add_1:0#0",
         "llama_backbone_1/token_embedding_1/GatherV2:0"],
        ["llama_backbone_1/transformer_layer_0_1/feedforward_layernorm_1/mul_1:0"]),
    # BERT's attention output weight, reshaped by a target that
    # ReduceProd and Concat compute from constants (the output projection's
    # Gemm reads it: input 1 of the Gemm under the Squeeze under the bias)
    "zoo_constant_folding_keras": (
        "bert.keras.dynamic", [],
        ["bert_backbone_1/transformer_layer_0_1/self_attention_layer_1/attention_output_1/"
         "BiasAdd:0#0#0#0#1"]),
    # Keras 3's MultiHeadAttention (KerasHub, static shapes): BERT's, its
    # padding mask over the keys alone ...
    "zoo_attention_keras": (
        "bert.keras.static", ["bert_backbone_1/embeddings_layer_norm_1/add_2:0", "padding_mask"],
        ["bert_backbone_1/transformer_layer_0_1/self_attention_layer_1/attention_output_1/"
         "Reshape:0"]),
    # ... GPT-2's, its causal and padding mask one row per query
    "zoo_attention_keras_causal": (
        "gpt2.keras.static",
        ["gpt2_backbone_1/transformer_layer_0_1/self_attention_layer_norm_1/add_2:0",
         "padding_mask"],
        ["gpt2_backbone_1/transformer_layer_0_1/self_attention_1/attention_output_1/Reshape:0"]),
    # ... LLaMA's: Q and K rotated after the head split, K and V repeated
    # for grouped-query attention, the scores scaled after the product
    "zoo_attention_keras_heads": (
        "llama.keras.static",
        ["llama_backbone_1/transformer_layer_0_1/self_attention_layernorm_1/mul_1:0",
         "padding_mask"],
        ["llama_backbone_1/transformer_layer_0_1/self_attention_1/attention_output_1/Reshape:0"]),
    # LLaMA's Q and K rotated (KerasHub, static shapes): the heads [B, S, N,
    # H] split in halves, rotate_half Keras's stack viewed as them, tables
    # [1, S, 1, H]
    "zoo_rotary_keras": (
        "llama.keras.static",
        ["llama_backbone_1/transformer_layer_0_1/self_attention_1/query_1/Reshape_1:0",
         "llama_backbone_1/transformer_layer_0_1/self_attention_1/key_1/Reshape_1:0"],
        ["llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_1/"
         "add_1:0",
         "llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_3/"
         "add_1:0"]),
    # ... with dynamic shapes: the tables computed from the positions, f
    # stacked twice and viewed as concat(f, f)
    "zoo_rotary_keras_computed": (
        "llama.keras.dynamic",
        ["llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_1/"
         "add_1:0#0#0",
         "llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_3/"
         "add_1:0#0#0"],
        ["llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_1/"
         "add_1:0",
         "llama_backbone_1/transformer_layer_0_1/self_attention_1/llama_rotary_embedding_3/"
         "add_1:0"]),
    # ... BERT's with dynamic shapes: the projections a Gemm over rows viewed
    # as [B, S, 4, 16, 1] and squeezed, the heads merged into rows through an
    # Unsqueeze (up to the output projection's Gemm's rows)
    "zoo_attention_keras_rows": (
        "bert.keras.dynamic", ["bert_backbone_1/embeddings_layer_norm_1/add_2:0", "padding_mask"],
        ["bert_backbone_1/transformer_layer_0_1/self_attention_layer_1/attention_output_1/"
         "BiasAdd:0#0#0#0#0"]),
}
# GPT-2's decode over a KV cache again, the mask of the keys' count as the
# export declares it (the past's length plus one; zoo_attention_cache_keys
# renames it apart)
CUTS["zoo_attention_cache"] = CUTS["zoo_attention_cache_keys"]


def resolve(model, names):
    """Value names; `X#i` is input i of the node that computes X (`X#i#j`:
    then input j of the node that computes that)."""
    if not any("#" in n for n in names):
        return names
    producers = {o: n for n in onnx.load(os.path.join(ZOO, model + ".onnx")).graph.node
                 for o in n.output}
    out = []
    for name in names:
        value, *hops = name.split("#")
        for i in hops:
            value = producers[value].input[int(i)]
        out.append(value)
    return out


# Cuts of Keras's exports, whose every unknown dimension is a symbol of its
# own: their inputs' batch and sequence named so, as `graft apply
# --input-shape token_ids=batch,sequence ...` says of the whole export,
# and the hidden width where tf2onnx left it unknown (64, as graft's shape
# inference finds it in the whole export).
SHARED_DIMS = {"zoo_skip_layer_norm_keras", "zoo_layer_norm_keras17", "zoo_rms_norm_keras",
               "zoo_attention_keras_rows",
               # and cuts of torch's dynamic exports inside, whose values'
               # dimensions the export names apart from the inputs'
               "zoo_attention_causal_slice", "zoo_skip_layer_norm_positions"}


# Cuts whose inputs tf2onnx left all unknown, given their sizes: Q's heads
# and K's (LLaMA's 4 and 2 heads of 16) over one batch and sequence.
INPUT_SIZES = {"zoo_rotary_keras_computed": [["batch", "sequence", 4, 16],
                                             ["batch", "sequence", 2, 16]],
               # the mask as the export computes it from attention_mask, of
               # that input's length (its value_info names it the past's plus
               # one, which the export cannot show the graph to compute)
               "zoo_attention_cache_keys": [["s43", 1]] + [["s43", "4", "s36", "16"]] * 2
               + [["s43", 4, 1, 16]] * 3 + [["s43", 1, 1, "s55"]]}


def share_dims(cut, sizes=None):
    for i, value in enumerate(cut.graph.input):
        dims = value.type.tensor_type.shape.dim
        for dim, size in zip(dims, sizes[i] if sizes else ["batch", "sequence", 64]):
            if dim.HasField("dim_param") and isinstance(size, str):
                dim.dim_param = size
            elif dim.HasField("dim_param"):
                dim.dim_value = size


# Cut inputs that were constants in the export, made initializers of the
# values the export's Constant nodes hold.
FROZEN = {"zoo_constant_folding": ["/model/encoder/Constant_output_0"]}


def freeze(cut, model, names):
    """Makes the cut's inputs `names` initializers of the export's values."""
    source = onnx.load(os.path.join(ZOO, model + ".onnx"))
    for node in source.graph.node:
        if node.op_type == "Constant" and node.output[0] in names:
            value = onnx.numpy_helper.to_array(node.attribute[0].t)
            cut.graph.initializer.append(onnx.numpy_helper.from_array(value, node.output[0]))
    kept = [i for i in cut.graph.input if i.name not in names]
    del cut.graph.input[:]
    cut.graph.input.extend(kept)


# Cuts with one rule of graft's applied (bazel-bin/cli/graft), for the test
# of a rule that reads what another fused: name: (cut, rule file, rule).
REWRITTEN = {
    "zoo_mha": ("zoo_attention_packed", "rules/onnx/transformers/attention.graft",
                "multi_head_attention_sdpa"),
    "zoo_mha_prescaled": ("zoo_attention_prescaled", "rules/onnx/transformers/attention.graft",
                          "multi_head_attention_sdpa"),
    "zoo_mha_cross": ("zoo_cross_attention", "rules/onnx/transformers/attention.graft",
                      "multi_head_attention_sdpa"),
    "zoo_mha_keras": ("zoo_attention_keras", "rules/onnx/transformers/attention.graft",
                      "multi_head_attention_keras"),
    # its scalars as initializers, as the pipeline's first step makes them
    "zoo_attention_eager_init": ("zoo_attention_eager",
                                 "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                 "extract_constant_to_initializer"),
    "zoo_attention_eager_masked_init": ("zoo_attention_eager_masked",
                                        "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                        "extract_constant_to_initializer"),
    # GPT-2's tied LM head as onnx-transformers leaves it: FusedMatMul
    # reading the embedding with transB
    "zoo_lm_head_fused": ("zoo_lm_head_tied", "rules/onnx/fused_matmul.graft",
                          "fused_matmul_transpose_b"),
    # as the pipeline's steps before the fusions' second run leave it: its
    # constants initializers, its float-to-float casts gone, its
    # rotate_half's slices at the head's half (shape arithmetic folded)
    "zoo_rotary_computed_ts_folded": (
        "zoo_rotary_computed_ts",
        [("rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
          "extract_constant_to_initializer"),
         ("rules/onnx/onnxoptimizer/eliminate_nop_cast.graft", "eliminate_nop_cast"),
         ("rules/onnx/shape_arithmetic.graft", "fold_shape_arithmetic")]),
    # as the pipeline's steps before the fusions' second run leave it (its
    # view targets computed from shapes made constants)
    "zoo_attention_causal_slice_folded": (
        "zoo_attention_causal_slice",
        [("rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
          "extract_constant_to_initializer"),
         ("rules/onnx/onnxoptimizer/eliminate_nop_cast.graft", "eliminate_nop_cast"),
         ("rules/onnx/shape_arithmetic.graft", "fold_shape_arithmetic"),
         ("rules/onnx/view_targets.graft", "constant_view_target")]),
    "zoo_skip_layer_norm_positions_init": ("zoo_skip_layer_norm_positions",
                                           "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                           "extract_constant_to_initializer"),
    "zoo_attention_position_bias_init": ("zoo_attention_position_bias",
                                         "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                         "extract_constant_to_initializer"),
    "zoo_attention_eager_heads_init": ("zoo_attention_eager_heads",
                                       "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                       "extract_constant_to_initializer"),
    "zoo_fast_gelu_cubed_init": ("zoo_fast_gelu_cubed",
                                 "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                 "extract_constant_to_initializer"),
    # the Skip norm that rule writes, for the rule that takes its bias in
    "zoo_skip_layer_norm_skip_bias": ("zoo_skip_bias_second",
                                      "rules/onnx/transformers/layer_norm.graft",
                                      "skip_layer_norm_op"),
    "zoo_shape_arithmetic_init": ("zoo_shape_arithmetic",
                                  "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                  "extract_constant_to_initializer"),
    "zoo_constant_folding_init": ("zoo_constant_folding",
                                  "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                  "extract_constant_to_initializer"),
    "zoo_rotary_angles_init": ("zoo_rotary_angles",
                               "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                               "extract_constant_to_initializer"),
    "zoo_conv_bn_init": ("zoo_conv_bn",
                         "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                         "extract_constant_to_initializer"),
    "zoo_view_target_init": ("zoo_view_target",
                             "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                             "extract_constant_to_initializer"),
    "zoo_embed_layer_norm_opset14_init": ("zoo_embed_layer_norm_opset14",
                                          "rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
                                          "extract_constant_to_initializer"),
    # as the fusions' second run sees it: its shape arithmetic and constants
    # folded (the rows' view target), its head splits' views without the
    # unit sizes the Squeezes drop
    "zoo_attention_keras_rows_viewed": (
        "zoo_attention_keras_rows",
        [("rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
          "extract_constant_to_initializer"),
         ("rules/onnx/shape_arithmetic.graft", "fold_shape_arithmetic"),
         ("rules/onnx/constant_folding.graft", "fold_constant_ops"),
         ("rules/onnx/view_targets.graft", "view_without_trailing_units")]),
    # as the fusions' second run sees it: its shape arithmetic and constants
    # folded (rotate_half's view target)
    "zoo_rotary_keras_computed_folded": (
        "zoo_rotary_keras_computed",
        [("rules/onnx/onnxoptimizer/extract_constant_to_initializer.graft",
          "extract_constant_to_initializer"),
         ("rules/onnx/shape_arithmetic.graft", "fold_shape_arithmetic"),
         ("rules/onnx/constant_folding.graft", "fold_constant_ops")]),
    # Keras's RMS norm in torch's order, for the Skip norm rule
    "zoo_rms_norm_keras_ordered": ("zoo_rms_norm_keras", "rules/onnx/transformers/rms_norm.graft",
                                   "rsqrt_scaled_last"),
    # the MultiHeadAttention over repeated K and V heads that the LLaMA
    # family's attention fuses into, for the rule that makes it grouped
    "zoo_gqa_dynamic": ("zoo_sdpa_gqa_dynamic", "rules/onnx/transformers/attention.graft",
                        "multi_head_attention_sdpa_heads"),
    # ... and over a KV cache's past and the step's own keys joined, for the
    # rules that take the past as the op's own
    "zoo_gqa_cache": ("zoo_sdpa_gqa_cache", "rules/onnx/transformers/attention.graft",
                      "multi_head_attention_sdpa_heads"),
    "zoo_mha_cache": ("zoo_attention_cache", "rules/onnx/transformers/attention.graft",
                      "multi_head_attention_sdpa_heads"),
    "zoo_mha_cache_keys_bias": ("zoo_attention_cache_keys",
                                "rules/onnx/transformers/attention.graft",
                                "multi_head_attention_sdpa_heads"),
    # Q's and K's rotary embeddings and the attention fused, for the rule
    # that rotates Q's rows as they are
    "zoo_rotary_heads": (
        "zoo_rotary_attention",
        [("rules/onnx/transformers/rotary.graft", "rotary_embedding_positions"),
         ("rules/onnx/transformers/attention.graft", "multi_head_attention_sdpa_heads")]),
    # ... as GroupQueryAttention, for the rule that returns its present K
    # and V
    "zoo_gqa_heads_returned": (
        "zoo_rotary_heads",
        [("rules/onnx/transformers/attention.graft", "group_query_attention",
          "grouped_attention=true")]),
    "zoo_rotary_normed_heads": (
        "zoo_rotary_normed_attention",
        [("rules/onnx/transformers/rotary.graft", "rotary_embedding_positions"),
         ("rules/onnx/transformers/attention.graft", "multi_head_attention_sdpa_heads")]),
    # ... its weights folded, as the pipeline's third step leaves them
    "zoo_rms_norm_heads_folded": ("zoo_rms_norm_heads", "rules/onnx/constant_folding.graft",
                                  "fold_constant_ops"),
    # GPT-2's attention fused, its projection as MatMul and Add
    "zoo_mha_packed_bias": (
        "zoo_attention_packed_bias",
        [("rules/onnx/transformers/fully_connected.graft", "fully_connected"),
         ("rules/onnx/transformers/attention.graft", "multi_head_attention_sdpa")]),
    # GPT-2's prefill attention fused, its K's and V's heads returned
    "zoo_mha_heads_returned": ("zoo_attention_heads_returned",
                               "rules/onnx/transformers/attention.graft",
                               "multi_head_attention_sdpa_heads"),
    "zoo_gqa_eager_heads": ("zoo_attention_eager_heads_init",
                            "rules/onnx/transformers/attention.graft",
                            "multi_head_attention_eager_heads"),
    "zoo_mha_multi_query": ("zoo_sdpa_multi_query", "rules/onnx/transformers/attention.graft",
                            "multi_head_attention_sdpa_heads"),
    # ... and Keras's, its K and V heads tiled
    "zoo_gqa_keras": ("zoo_attention_keras_heads", "rules/onnx/transformers/attention.graft",
                      "multi_head_attention_keras_heads"),
    # GPT-Neo's attention fused (TorchScript, dynamic shapes) and the
    # transposes that undo each other gone: the context split into heads
    # and merged again, two views back to their input's shape
    "zoo_view_back": (
        "zoo_attention_causal_slice_folded",
        [("rules/onnx/transformers/attention.graft", "multi_head_attention_eager_heads"),
         ("rules/onnx/onnxoptimizer/fuse_consecutive_transposes.graft",
          "fuse_consecutive_transposes")]),
}


def declarations(source):
    """A rule file's top-level declarations, in order: [kind, name, text]
    (a pattern, guard, fragment, param or rule, up to the next line at
    the margin)."""
    decls, current = [], None
    for line in source.splitlines(keepends=True):
        start = re.match(r"(pattern|guard|fragment|param|rule) (\w+)", line)
        if start:
            current = [start.group(1), start.group(2), line]
            decls.append(current)
        elif current and (line[:1] in (" ", "\t") or line.startswith("}")):
            current[2] += line
            if line.startswith("}"):
                current = None
        else:
            current = None
    return decls


def only_rule(source, rule):
    """A rule file of `rule` alone, with the named patterns, guards,
    fragments and params it reads (and those they read)."""
    decls = declarations(source)
    text = next(t for kind, name, t in decls if kind == "rule" and name == rule)
    kept = set()
    changed = True
    while changed:
        changed = False
        for i, (kind, name, decl) in enumerate(decls):
            if kind in ("pattern", "guard", "fragment", "param") and i not in kept and (
                    re.search(rf"\b{name}\(|=\s*{name}\b", text)
                    or (kind == "param" and re.search(rf"\b{name}\b", text))):
                kept.add(i)
                text += decl
                changed = True
    return ("dialect onnx\n" + "".join(decls[i][2] for i in sorted(kept))
            + next(t for kind, name, t in decls if kind == "rule" and name == rule))


def rewritten(name, source, rules):
    """The cut `source` after each (rule file, rule[, params]) of `rules` in turn,
    each rule alone: a temporary copy of its file with that rule, applied
    with those params (`name=value`)."""
    root = os.path.dirname(os.path.dirname(HERE))
    graft = os.path.join(root, "bazel-bin", "cli", "graft")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "in.onnx")
        onnx.save(text_format.Parse(open(os.path.join(OUT, source + ".onnxtxt")).read(),
                                    onnx.ModelProto()), path)
        for rule_file, rule, *params in rules:
            with open(os.path.join(tmp, "rule.graft"), "w") as f:
                f.write(only_rule(open(os.path.join(root, rule_file)).read(), rule))
            out = os.path.join(tmp, "out.onnx")
            subprocess.run([graft, "apply", "-r", os.path.join(tmp, "rule.graft"), path, "-o",
                            out, "-q", *(a for p in params for a in ("--param", p))],
                           check=True)
            os.replace(out, path)
        model = onnx.load(path)
    model.producer_name = f"cut from tests/data/zoo, {', '.join(r[1] for r in rules)} applied"
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(OUT, name + ".onnxtxt"), "w") as f:
        f.write(text_format.MessageToString(model))
    print(name, len(model.graph.node), "nodes")


def cut(name, model, inputs, outputs):
    """The cut `name` of `model` between `inputs` and `outputs`, written."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cut.onnx")
        if inputs:
            onnx.utils.extract_model(os.path.join(ZOO, model + ".onnx"), path,
                                    resolve(model, inputs), resolve(model, outputs))
            part = onnx.load(path)
        else:  # what only initializers compute (extract_model wants an input)
            whole = onnx.shape_inference.infer_shapes(
                onnx.load(os.path.join(ZOO, model + ".onnx")), data_prop=True)
            part = onnx.utils.Extractor(whole).extract_model([], resolve(model, outputs))
    freeze(part, model, FROZEN.get(name, []))
    if name in SHARED_DIMS or name in INPUT_SIZES:
        share_dims(part, INPUT_SIZES.get(name))
    part.producer_name = f"cut from tests/data/zoo/{model}.onnx"
    for node in part.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    onnx.checker.check_model(part, full_check=True)
    with open(os.path.join(OUT, name + ".onnxtxt"), "w") as f:
        f.write(text_format.MessageToString(part))
    print(name, len(part.graph.node), "nodes")


# name: (cut, symmetric): the cut as onnxruntime's MatMulNBitsQuantizer
# writes it in QuantFormat.QDQ (int4 or uint4 weights in blocks of 32,
# standard DequantizeLinear), for the readers and their fuzzing
QUANTIZED = {
    "zoo_llama_mlp23_int4": ("zoo_llama_mlp23", True),
    "zoo_llama_mlp23_uint4": ("zoo_llama_mlp23", False),
}


def quantized(name, source, symmetric):
    """The cut `source` through the quantizer, written."""
    from onnxruntime.quantization import matmul_nbits_quantizer
    from onnxruntime.quantization.quant_utils import QuantFormat
    model = text_format.Parse(open(os.path.join(OUT, source + ".onnxtxt")).read(), onnx.ModelProto())
    config = matmul_nbits_quantizer.DefaultWeightOnlyQuantConfig(
        block_size=32, is_symmetric=symmetric, quant_format=QuantFormat.QDQ)
    quantizer = matmul_nbits_quantizer.MatMulNBitsQuantizer(model, algo_config=config)
    quantizer.process()
    model = quantizer.model.model
    model.producer_name = "cut from tests/data/zoo, quantized by onnxruntime's MatMulNBitsQuantizer (QDQ)"
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(OUT, name + ".onnxtxt"), "w") as f:
        f.write(text_format.MessageToString(model))
    print(name, len(model.graph.node), "nodes")


def main(names):
    """Every cut, then every rewritten or quantized one; or only those named."""
    for name, (model, inputs, outputs) in CUTS.items():
        if not names or name in names:
            cut(name, model, inputs, outputs)
    for name, (source, *rules) in REWRITTEN.items():
        if not names or name in names:
            # one rule (a file and its rule), or several in turn
            rewritten(name, source, [tuple(rules)] if isinstance(rules[0], str) else rules[0])
    for name, (source, symmetric) in QUANTIZED.items():
        if not names or name in names:
            quantized(name, source, symmetric)


if __name__ == "__main__":
    main(sys.argv[1:])

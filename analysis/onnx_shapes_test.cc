// Shapes of ONNX graphs with symbolic dimensions, as torch's exporters write
// them with dynamic batch and sequence: buffers sliced to the sequence's
// length, positions from Range, views by computed targets.
#include <string>

#include "analysis/shapes.h"
#include "dialects/onnx/onnx_model.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

using Dims = std::vector<int64_t>;

// ids [batch, sequence], k [1] (a bound known only when the graph runs);
// positions sliced from a buffer of 64 and a Range to the sequence's
// length; the embeddings' sum; views of it.
constexpr char kModel[] = R"pb(
  ir_version: 8
  opset_import { version: 17 }
  graph {
    name: "symbols"
    input { name: "ids" type { tensor_type { elem_type: 7 shape {
      dim { dim_param: "batch" } dim { dim_param: "sequence" } } } } }
    input { name: "k" type { tensor_type { elem_type: 7 shape { dim { dim_value: 1 } } } } }
    initializer { name: "buffer" data_type: 7 dims: 1 dims: 64 int64_data: 0 }
    initializer { name: "words" data_type: 1 dims: 100 dims: 8 float_data: 0 }
    initializer { name: "table" data_type: 1 dims: 64 dims: 8 float_data: 0 }
    initializer { name: "zero" data_type: 7 dims: 1 int64_data: 0 }
    initializer { name: "one" data_type: 7 dims: 1 int64_data: 1 }
    initializer { name: "zero_scalar" data_type: 7 int64_data: 0 }
    initializer { name: "one_scalar" data_type: 7 int64_data: 1 }
    initializer { name: "flat" data_type: 7 dims: 2 int64_data: -1 int64_data: 8 }
    node { name: "len" op_type: "Shape" input: "ids" output: "len"
           attribute { name: "start" type: INT i: 1 } attribute { name: "end" type: INT i: 2 } }
    node { name: "pos" op_type: "Slice" input: "buffer" input: "zero" input: "len" input: "one"
           output: "pos" }
    node { name: "word" op_type: "Gather" input: "words" input: "ids" output: "word" }
    node { name: "where" op_type: "Gather" input: "table" input: "pos" output: "where" }
    node { name: "sum" op_type: "Add" input: "word" input: "where" output: "sum" }
    node { name: "s" op_type: "Squeeze" input: "len" input: "zero" output: "s" }
    node { name: "range" op_type: "Range" input: "zero_scalar" input: "s" input: "one_scalar"
           output: "range" }
    node { name: "rows" op_type: "Reshape" input: "sum" input: "flat" output: "rows" }
    node { name: "rows2" op_type: "Reshape" input: "word" input: "flat" output: "rows2" }
    node { name: "cut" op_type: "Slice" input: "sum" input: "k" input: "k" input: "one"
           output: "cut" }
    node { name: "other" op_type: "Add" input: "word" input: "cut" output: "other" }
    output { name: "sum" type { tensor_type { elem_type: 1 } } }
    output { name: "range" type { tensor_type { elem_type: 7 } } }
    output { name: "rows" type { tensor_type { elem_type: 1 } } }
    output { name: "rows2" type { tensor_type { elem_type: 1 } } }
    output { name: "other" type { tensor_type { elem_type: 1 } } }
  }
)pb";

// The shapes of a model given as text, by node.
class OnnxShapes : public ::testing::Test {
 protected:
  void Load(const char* text, const ShapeOptions& options = {}) {
    onnx::ModelProto model;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &model));
    absl::StatusOr<Graph> graph = ParseOnnx(model.SerializeAsString(), "model.onnx");
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    shapes_ = InferShapes(graph_, options);
  }
  const TensorInfo& Of(const std::string& node) {
    const NodeId id = graph_.FindId(node);
    EXPECT_NE(id, kNoNode) << node;
    return shapes_.at({id, 0});
  }
  Graph graph_;
  ShapeMap shapes_;
};

class SymbolicShapes : public OnnxShapes {
 protected:
  void SetUp() override { Load(kModel); }
};

TEST_F(SymbolicShapes, ABufferSlicedToTheSequenceBroadcastsToTheSequence) {
  const int64_t batch = SymbolicDim("batch"), sequence = SymbolicDim("sequence");
  // min(64, sequence): a symbol of its own, not the sequence's
  const TensorInfo& pos = Of("pos");
  ASSERT_EQ(pos.dims.size(), 2u);
  EXPECT_EQ(pos.dims[0], 1);
  EXPECT_TRUE(IsSymbolicDim(pos.dims[1]));
  EXPECT_NE(pos.dims[1], sequence);
  // ... which, added to the sequence's words, gives the sequence wherever
  // the graph runs
  EXPECT_EQ(Of("sum").dims, (Dims{batch, sequence, 8}));
}

// A declared name for what inference derives replaces the derivation (the
// exporter's own symbol), but onnx's shape inference's `unk__N`, which only
// says a dimension is unknown, does not: the buffer cut to the sequence
// still meets the sequence.
TEST_F(OnnxShapes, AnonymousDeclaredDimensionsKeepWhatInferenceDerived) {
  auto declaring = [](const std::string& name) {
    std::string text = kModel;
    const std::string at = "    output { name: \"sum\"";
    text.replace(text.find(at), 0,
                 "    value_info { name: \"pos\" type { tensor_type { elem_type: 7 shape {\n"
                 "      dim { dim_value: 1 } dim { dim_param: \"" + name + "\" } } } } }\n");
    return text;
  };
  const int64_t batch = SymbolicDim("batch"), sequence = SymbolicDim("sequence");
  Load(declaring("unk__3").c_str());
  ASSERT_EQ(Of("pos").dims.size(), 2u);
  EXPECT_TRUE(IsPrefixSlicedTo(Of("pos").dims[1], sequence));
  EXPECT_EQ(Of("sum").dims, (Dims{batch, sequence, 8}));
  Load(declaring("positions").c_str());
  EXPECT_EQ(Of("pos").dims, (Dims{1, SymbolicDim("positions")}));
}

TEST_F(SymbolicShapes, RangeToASymbolHasThatManyElements) {
  EXPECT_EQ(Of("range").dims, (Dims{SymbolicDim("sequence")}));
}

TEST_F(SymbolicShapes, ViewsOfEqualShapesHaveEqualDerivedDimensions) {
  const TensorInfo& rows = Of("rows");
  ASSERT_EQ(rows.dims.size(), 2u);
  EXPECT_TRUE(IsSymbolicDim(rows.dims[0]));  // batch * sequence
  EXPECT_EQ(rows.dims[1], 8);
  EXPECT_EQ(Of("rows2").dims, rows.dims);
}

TEST_F(SymbolicShapes, BoundsKnownOnlyWhenTheGraphRunsKeepTheRank) {
  const TensorInfo& cut = Of("cut");
  ASSERT_TRUE(cut.known_rank);
  EXPECT_EQ(cut.dims, (Dims{SymbolicDim("batch"), -1, 8}));
  // broadcast with the sequence: it may be the sequence or the cut's own
  EXPECT_EQ(Of("other").dims, (Dims{SymbolicDim("batch"), -1, 8}));
}

// BART's decoder ids shifted right by ScatterND (TorchScript) and DINOv2's
// position table resized to the patches' grid by sizes computed from a
// Shape: the data's shape, and the sizes; sizes not known keep the rank.
constexpr char kScatterResize[] = R"pb(
  ir_version: 8
  opset_import { version: 17 }
  graph {
    name: "scatter_resize"
    input { name: "ids" type { tensor_type { elem_type: 7 shape {
      dim { dim_param: "batch" } dim { dim_value: 8 } } } } }
    input { name: "table" type { tensor_type { elem_type: 1 shape {
      dim { dim_value: 1 } dim { dim_value: 64 } dim { dim_value: 7 } dim { dim_value: 7 } } } } }
    input { name: "runtime_sizes" type { tensor_type { elem_type: 7 shape { dim { dim_value: 4 } } } } }
    initializer { name: "where" data_type: 7 dims: 1 dims: 1 int64_data: 0 }
    initializer { name: "start" data_type: 7 dims: 1 int64_data: 0 }
    initializer { name: "two" data_type: 7 dims: 1 int64_data: 2 }
    initializer { name: "hw" data_type: 7 dims: 2 int64_data: 4 int64_data: 4 }
    node { name: "first" op_type: "Slice" input: "ids" input: "start" input: "two"
           output: "first" }
    node { name: "shifted" op_type: "ScatterND" input: "ids" input: "where" input: "first"
           output: "shifted" }
    node { name: "shape" op_type: "Shape" input: "table" output: "shape" }
    node { name: "nc" op_type: "Slice" input: "shape" input: "start" input: "two" output: "nc" }
    node { name: "sizes" op_type: "Concat" input: "nc" input: "hw" output: "sizes"
           attribute { name: "axis" type: INT i: 0 } }
    node { name: "resized" op_type: "Resize" input: "table" input: "" input: "" input: "sizes"
           output: "resized" }
    node { name: "unknown" op_type: "Resize" input: "table" input: "" input: ""
           input: "runtime_sizes" output: "unknown" }
    output { name: "shifted" type { tensor_type { elem_type: 7 } } }
    output { name: "resized" type { tensor_type { elem_type: 1 } } }
    output { name: "unknown" type { tensor_type { elem_type: 1 } } }
  }
)pb";

TEST_F(OnnxShapes, ScatterKeepsTheDataShapeAndResizeTakesItsSizes) {
  Load(kScatterResize);
  EXPECT_EQ(Of("shifted").dims, (Dims{SymbolicDim("batch"), 8}));
  EXPECT_EQ(Of("resized").dims, (Dims{1, 64, 4, 4}));
  const TensorInfo& unknown = Of("unknown");
  ASSERT_TRUE(unknown.known_rank);
  EXPECT_EQ(unknown.dims, (Dims{-1, -1, -1, -1}));
}

// onnxruntime's fused ops as the transformer rules write them: Q and K
// rotated over their heads [B, N, S, H], attention over heads [B, N, L, H].
constexpr char kFused[] = R"pb(
  ir_version: 8
  opset_import { version: 17 }
  opset_import { domain: "com.microsoft" version: 1 }
  graph {
    name: "fused"
    input { name: "qh" type { tensor_type { elem_type: 1 shape {
      dim { dim_param: "batch" } dim { dim_value: 4 } dim { dim_param: "sequence" }
      dim { dim_value: 16 } } } } }
    input { name: "q" type { tensor_type { elem_type: 1 shape {
      dim { dim_param: "batch" } dim { dim_param: "sequence" } dim { dim_value: 64 } } } } }
    input { name: "pos" type { tensor_type { elem_type: 7 shape {
      dim { dim_param: "batch" } dim { dim_param: "sequence" } } } } }
    initializer { name: "table" data_type: 1 dims: 32 dims: 8 float_data: 0 }
    node { name: "rotated" op_type: "RotaryEmbedding" domain: "com.microsoft" input: "qh"
           input: "pos" input: "table" input: "table" output: "rotated" }
    node { name: "mha" op_type: "MultiHeadAttention" domain: "com.microsoft" input: "q"
           input: "rotated" input: "qh" output: "mha"
           attribute { name: "num_heads" type: INT i: 4 } }
    output { name: "mha" type { tensor_type { elem_type: 1 } } }
  }
)pb";

TEST_F(OnnxShapes, RotationsKeepTheirShapeAndAttentionOverHeadsMergesThem) {
  Load(kFused);
  EXPECT_EQ(Of("rotated").dims, (Dims{SymbolicDim("batch"), 4, SymbolicDim("sequence"), 16}));
  EXPECT_EQ(Of("mha").dims, (Dims{SymbolicDim("batch"), SymbolicDim("sequence"), 64}));
}

// A mask expanded to sizes a folded Equal picks (a bool constant): torch's
// expand(2, -1, 8, 8) once constant folding has run.
constexpr char kFoldedExpand[] = R"pb(
  ir_version: 8
  opset_import { version: 17 }
  graph {
    name: "expand"
    input { name: "mask" type { tensor_type { elem_type: 9 shape {
      dim { dim_value: 1 } dim { dim_value: 1 } dim { dim_value: 8 } dim { dim_value: 8 } } } } }
    initializer { name: "keep" data_type: 9 dims: 4 int32_data: 0 int32_data: 1 int32_data: 0
                  int32_data: 0 }
    initializer { name: "ones" data_type: 7 dims: 4 int64_data: 1 int64_data: 1 int64_data: 1
                  int64_data: 1 }
    initializer { name: "sizes" data_type: 7 dims: 4 int64_data: 2 int64_data: -1 int64_data: 8
                  int64_data: 8 }
    node { name: "picked" op_type: "Where" input: "keep" input: "ones" input: "sizes"
           output: "picked" }
    node { name: "expanded" op_type: "Expand" input: "mask" input: "picked" output: "expanded" }
    output { name: "expanded" type { tensor_type { elem_type: 9 } } }
  }
)pb";

TEST_F(OnnxShapes, SizesPickedByABoolConstantAreKnown) {
  Load(kFoldedExpand);
  EXPECT_EQ(Of("expanded").dims, (Dims{2, 1, 8, 8}));
}

// Keras's repeat of K's heads for grouped-query attention (a Tile of 2 on
// one axis, the symbolic batch and sequence kept), a Tile by repeats not
// known, and one whose product would not fit.
constexpr char kTile[] = R"pb(
  ir_version: 8
  opset_import { version: 17 }
  graph {
    name: "tile"
    input {
      name: "heads"
      type {
        tensor_type {
          elem_type: 1
          shape {
            dim { dim_param: "batch" }
            dim { dim_param: "sequence" }
            dim { dim_value: 2 }
            dim { dim_value: 1 }
            dim { dim_value: 16 }
          }
        }
      }
    }
    input {
      name: "reps"
      type {
        tensor_type {
          elem_type: 7
          shape { dim { dim_value: 5 } }
        }
      }
    }
    input {
      name: "big"
      type {
        tensor_type {
          elem_type: 1
          shape { dim { dim_value: 3000000000 } }
        }
      }
    }
    initializer {
      name: "twice"
      data_type: 7
      dims: 5
      int64_data: 1
      int64_data: 1
      int64_data: 1
      int64_data: 2
      int64_data: 1
    }
    initializer { name: "huge" data_type: 7 dims: 1 int64_data: 4000000000000 }
    node {
      name: "tiled"
      op_type: "Tile"
      input: "heads"
      input: "twice"
      output: "tiled"
    }
    node {
      name: "any"
      op_type: "Tile"
      input: "heads"
      input: "reps"
      output: "any"
    }
    node {
      name: "over"
      op_type: "Tile"
      input: "big"
      input: "huge"
      output: "over"
    }
    output {
      name: "tiled"
      type { tensor_type { elem_type: 1 } }
    }
    output {
      name: "any"
      type { tensor_type { elem_type: 1 } }
    }
    output {
      name: "over"
      type { tensor_type { elem_type: 1 } }
    }
  }
)pb";

TEST_F(OnnxShapes, TileMultipliesEachDimensionByItsRepeat) {
  Load(kTile);
  EXPECT_EQ(Of("tiled").dims,
            (Dims{SymbolicDim("batch"), SymbolicDim("sequence"), 2, 2, 16}));
  EXPECT_EQ(Of("any").dims, (Dims{-1, -1, -1, -1, -1}));
  EXPECT_EQ(Of("over").dims, (Dims{-1}));
}

// A KV cache as transformers' exporter writes it: the past keys' fixed
// sizes named as symbols ("4", "16"), joined along the sequence with the
// new keys, whose sizes are known: the other axes take the known sizes.
constexpr char kCache[] = R"pb(
  ir_version: 8
  opset_import { version: 20 }
  graph {
    name: "cache"
    input {
      name: "past"
      type {
        tensor_type {
          elem_type: 1
          shape {
            dim { dim_param: "batch" }
            dim { dim_param: "4" }
            dim { dim_param: "past" }
            dim { dim_param: "16" }
          }
        }
      }
    }
    input {
      name: "new"
      type {
        tensor_type {
          elem_type: 1
          shape {
            dim { dim_param: "batch" }
            dim { dim_value: 4 }
            dim { dim_value: 1 }
            dim { dim_value: 16 }
          }
        }
      }
    }
    input {
      name: "other"
      type {
        tensor_type {
          elem_type: 1
          shape {
            dim {}
            dim { dim_param: "heads" }
            dim { dim_value: 1 }
            dim {}
          }
        }
      }
    }
    node {
      name: "keys"
      op_type: "Concat"
      input: "past"
      input: "new"
      output: "keys"
      attribute { name: "axis" type: INT i: -2 }
    }
    node {
      name: "unnamed"
      op_type: "Concat"
      input: "other"
      input: "past"
      output: "unnamed"
      attribute { name: "axis" type: INT i: 2 }
    }
    input {
      name: "declared"
      type {
        tensor_type {
          elem_type: 1
          shape {
            dim { dim_param: "batch" }
            dim { dim_param: "past + 1" }
            dim { dim_param: "1+past + 2" }
            dim { dim_param: "past + x1" }
            dim { dim_param: "past - 1" }
          }
        }
      }
    }
    initializer { name: "one" data_type: 7 dims: 1 int64_data: 1 }
    node {
      name: "past_len"
      op_type: "Shape"
      input: "past"
      output: "past_len"
      attribute { name: "start" type: INT i: 2 }
      attribute { name: "end" type: INT i: 3 }
    }
    node {
      name: "total"
      op_type: "Add"
      input: "past_len"
      input: "one"
      output: "total"
    }
    output {
      name: "total"
      type { tensor_type { elem_type: 7 } }
    }
    output {
      name: "keys"
      type { tensor_type { elem_type: 1 } }
    }
    output {
      name: "unnamed"
      type { tensor_type { elem_type: 1 } }
    }
  }
)pb";

TEST_F(OnnxShapes, ConcatTakesTheBestKnownOfEachOtherAxis) {
  Load(kCache);
  const Dims keys = Of("keys").dims;
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0], SymbolicDim("batch"));
  EXPECT_EQ(keys[1], 4);
  EXPECT_EQ(keys[3], 16);
  // the past's length and one more: a symbol of that sum
  EXPECT_EQ(keys[2], DerivedSymbolicDim("sum", {SymbolicDim("past"), 1}));
  // and the same symbol where an exporter declares that sum, or where
  // shape arithmetic adds one to the past's length
  const Dims declared = Of("declared").dims;
  ASSERT_EQ(declared.size(), 5u);
  EXPECT_EQ(declared[1], keys[2]);
  EXPECT_EQ(
      declared[2],
      DerivedSymbolicDim(
          "sum", {DerivedSymbolicDim("sum", {SymbolicDim("past"), 1}), 2}));
  EXPECT_EQ(declared[3], DerivedSymbolicDim(
                             "sum", {SymbolicDim("past"), SymbolicDim("x1")}));
  EXPECT_EQ(declared[4], SymbolicDim("past - 1"));
  const TensorInfo total = Of("total");
  ASSERT_TRUE(total.value.has_value());
  EXPECT_EQ(*total.value, Dims{keys[2]});
  // an unknown axis takes a symbol; a symbol stays over another
  const Dims unnamed = Of("unnamed").dims;
  ASSERT_EQ(unnamed.size(), 4u);
  EXPECT_EQ(unnamed[0], SymbolicDim("batch"));
  EXPECT_EQ(unnamed[1], SymbolicDim("heads"));
  EXPECT_EQ(unnamed[3], SymbolicDim("16"));
}

// As tf2onnx writes Keras's models: every unknown dimension a symbol of its
// own (ids and mask do not say they share batch and sequence), a float
// Range to the sequence's length (a causal mask), slices to a TensorFlow
// end mask (1e9) and to a size read from a Shape.
constexpr char kKeras[] = R"pb(
  ir_version: 8
  opset_import { version: 15 }
  graph {
    name: "keras"
    input { name: "ids" type { tensor_type { elem_type: 6 shape {
      dim { dim_param: "unk__1" } dim { dim_param: "unk__2" } } } } }
    input { name: "mask" type { tensor_type { elem_type: 6 shape {
      dim { dim_param: "unk__3" } dim { dim_param: "unk__4" } } } } }
    input { name: "long" type { tensor_type { elem_type: 1 shape {
      dim { dim_value: 3000000000 } } } } }
    initializer { name: "e9" data_type: 7 dims: 1 int64_data: 1000000000 }
    initializer { name: "words" data_type: 1 dims: 100 dims: 8 float_data: 0 }
    initializer { name: "one" data_type: 7 dims: 1 int64_data: 1 }
    initializer { name: "two" data_type: 7 dims: 1 int64_data: 2 }
    initializer { name: "zero" data_type: 7 dims: 1 int64_data: 0 }
    initializer { name: "zeros" data_type: 7 dims: 3 int64_data: 0 int64_data: 0 int64_data: 0 }
    initializer { name: "ends" data_type: 7 dims: 3
                  int64_data: 1000000000 int64_data: 1000000000 int64_data: 1000000000 }
    initializer { name: "start" data_type: 1 float_data: 0 }
    initializer { name: "delta" data_type: 1 float_data: 1 }
    initializer { name: "half" data_type: 1 float_data: 0.5 }
    node { name: "word" op_type: "Gather" input: "words" input: "ids" output: "word" }
    node { name: "shape" op_type: "Shape" input: "ids" output: "shape" }
    node { name: "len" op_type: "Slice" input: "shape" input: "one" input: "two" output: "len" }
    node { name: "n" op_type: "Squeeze" input: "len" input: "zero" output: "n" }
    node { name: "nf" op_type: "Cast" input: "n" output: "nf"
           attribute { name: "to" type: INT i: 1 } }
    node { name: "range" op_type: "Range" input: "start" input: "nf" input: "delta"
           output: "range" }
    node { name: "halves" op_type: "Range" input: "half" input: "nf" input: "delta"
           output: "halves" }
    node { name: "whole" op_type: "Slice" input: "word" input: "zeros" input: "ends"
           output: "whole" }
    node { name: "to_len" op_type: "Slice" input: "word" input: "zero" input: "len" input: "one"
           output: "to_len" }
    node { name: "m" op_type: "Unsqueeze" input: "mask" input: "two" output: "m" }
    node { name: "mf" op_type: "Cast" input: "m" output: "mf"
           attribute { name: "to" type: INT i: 1 } }
    node { name: "masked" op_type: "Mul" input: "word" input: "mf" output: "masked" }
    node { name: "long_cut" op_type: "Slice" input: "long" input: "zero" input: "e9"
           output: "long_cut" }
    output { name: "range" type { tensor_type { elem_type: 1 } } }
    output { name: "halves" type { tensor_type { elem_type: 1 } } }
    output { name: "whole" type { tensor_type { elem_type: 1 } } }
    output { name: "to_len" type { tensor_type { elem_type: 1 } } }
    output { name: "masked" type { tensor_type { elem_type: 1 } } }
    output { name: "long_cut" type { tensor_type { elem_type: 1 } } }
  }
)pb";

TEST_F(OnnxShapes, NamedInputShapesSayWhatInputsShare) {
  ShapeOptions options;
  ASSERT_TRUE(ParseInputShape("ids=batch,sequence", &options).ok());
  ASSERT_TRUE(ParseInputShape("mask=batch,sequence", &options).ok());
  Load(kKeras, options);
  const int64_t batch = SymbolicDim("batch"), sequence = SymbolicDim("sequence");
  EXPECT_EQ(Of("word").dims, (Dims{batch, sequence, 8}));
  EXPECT_EQ(Of("masked").dims, (Dims{batch, sequence, 8}));
  // range(0.0, float(sequence), 1.0) has sequence elements; from 0.5, a
  // length that is not an integer bound's: unknown
  EXPECT_EQ(Of("range").dims, (Dims{sequence}));
  EXPECT_EQ(Of("halves").dims, (Dims{-1}));
  // a slice to 1e9 and one to the axis's own length keep the whole axis
  EXPECT_EQ(Of("whole").dims, (Dims{batch, sequence, 8}));
  EXPECT_EQ(Of("to_len").dims, (Dims{batch, sequence, 8}));
  // ... but an axis known to be longer is cut there
  EXPECT_EQ(Of("long_cut").dims, (Dims{1000000000}));
}

TEST_F(OnnxShapes, InputsNamedApartShareNothing) {
  Load(kKeras);
  const TensorInfo& word = Of("word");
  ASSERT_EQ(word.dims.size(), 3u);
  EXPECT_EQ(word.dims[0], SymbolicDim("unk__1"));
  // unk__1 * unk__3 may be either (one of them 1): not the words' batch
  const TensorInfo& masked = Of("masked");
  ASSERT_EQ(masked.dims.size(), 3u);
  EXPECT_NE(masked.dims[0], word.dims[0]);
}

TEST(InputShapes, TakeSizesNamesAndUnknowns) {
  ShapeOptions options;
  ASSERT_TRUE(ParseInputShape("x=1,?,-1,n_2", &options).ok());
  EXPECT_EQ(options.input_shapes["x"], (Dims{1, -1, -1, SymbolicDim("n_2")}));
  absl::Status bad = ParseInputShape("x=1,2b", &options);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("`2b` is not a dimension"), std::string::npos) << bad;
}

TEST(DerivedSymbols, AreStableAndRemembered) {
  const int64_t a = DerivedSymbolicDim("slice", {64, 0, SymbolicDim("n"), 1});
  EXPECT_EQ(a, DerivedSymbolicDim("slice", {64, 0, SymbolicDim("n"), 1}));
  EXPECT_NE(a, DerivedSymbolicDim("slice", {32, 0, SymbolicDim("n"), 1}));
  EXPECT_TRUE(IsSymbolicDim(a));
  std::optional<DerivedDim> def = DerivedSymbolicDimDefinition(a);
  ASSERT_TRUE(def.has_value());
  EXPECT_EQ(def->function, "slice");
  EXPECT_EQ(def->args.size(), 4u);
  EXPECT_FALSE(DerivedSymbolicDimDefinition(SymbolicDim("n")).has_value());
  EXPECT_FALSE(DerivedSymbolicDimDefinition(64).has_value());
}

}  // namespace
}  // namespace graft::analysis

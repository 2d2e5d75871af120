#include "engine/validate.h"

#include "engine/rewriter.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;

std::vector<std::string> Messages(const Graph& g,
                                  ValidateOptions options = {}) {
  std::vector<std::string> out;
  for (const ValidationIssue& issue : Validate(g, options)) {
    out.push_back(issue.message);
  }
  return out;
}

TEST(ValidateTest, RealTensorflowGraphsAreValid) {
  for (const char* path :
       {"examples/keras_cnn.pb", "tests/data/control_devices.pb"}) {
    absl::StatusOr<Graph> g = LoadGraph(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(Messages(*g), std::vector<std::string>{}) << path;
  }
}

TEST(ValidateTest, UnresolvedInputs) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "a"
      op: "Identity"
      input: "ghost"
      input: "^phantom"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  EXPECT_EQ(Messages(g),
            (std::vector<std::string>{
                "input 0 of `a` names `ghost`, which is not in the graph",
                "control input `^phantom` of `a` is not in the graph"}));
  EXPECT_FALSE(CheckValid(g).ok());
}

TEST(ValidateTest, OutputPortOutOfRange) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "r"
      op: "Relu"
      input: "x:1"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  EXPECT_EQ(Messages(g),
            (std::vector<std::string>{"input 0 of `r` reads `x:1`, but `x` "
                                      "(Placeholder) has 1 output(s)"}));
}

TEST(ValidateTest, DtypeMismatchAndInputCount) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "i"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_INT32 }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_INT32 } }
      }
    }
    node {
      name: "f"
      op: "Const"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "value"
        value { tensor { dtype: DT_FLOAT } }
      }
    }
    node {
      name: "r"
      op: "Relu"
      input: "i"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "add"
      op: "AddV2"
      input: "f"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  EXPECT_EQ(Messages(g),
            (std::vector<std::string>{
                "input 0 of `r` (Relu) expects float32 but `i` is int32",
                "`add` (AddV2) has 1 data input(s); its op takes 2"}));
  ValidateOptions no_dtypes;
  no_dtypes.check_dtypes = false;
  EXPECT_EQ(Messages(g, no_dtypes).size(), 1u);
}

TEST(ValidateTest, RefInputsMatchTheirValueType) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "v"
      op: "VariableV2"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
      attr {
        key: "shape"
        value { shape {} }
      }
    }
    node {
      name: "r"
      op: "Identity"
      input: "v"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  EXPECT_EQ(Messages(g), std::vector<std::string>{});
}

TEST(ValidateTest, Cycles) {
  Graph g = GraphFromText(R"pb(
    node {
      name: "a"
      op: "Identity"
      input: "c"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "b"
      op: "Identity"
      input: "a"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
    node { name: "c" op: "NoOp" input: "^b" }
  )pb");
  std::vector<std::string> messages = Messages(g);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0],
            "input 0 of `a` reads `c`, but `c` (NoOp) has 0 output(s)");
  EXPECT_EQ(messages[1], "the graph has a cycle: a -> b -> c -> a");
}

TEST(ValidateTest, MissingOutputsAndControlOrder) {
  Graph g = GraphFromText(R"pb(
    node { name: "init" op: "NoOp" }
    node {
      name: "x"
      op: "Placeholder"
      attr {
        key: "dtype"
        value { type: DT_FLOAT }
      }
    }
    node {
      name: "r"
      op: "Relu"
      input: "^init"
      input: "x"
      attr {
        key: "T"
        value { type: DT_FLOAT }
      }
    }
  )pb");
  ValidateOptions options;
  options.outputs = {"r", "logits:0"};
  EXPECT_EQ(Messages(g, options),
            (std::vector<std::string>{
                "`r` lists data input `x` after a control input",
                "output `logits:0` is not in the graph"}));
  // A rewrite of the node writes its inputs in the right order again.
  Rewriter rw(g);
  ASSERT_TRUE(rw.SetDevice(Id(g, "r"), "").ok());
  options.outputs = {"r"};
  EXPECT_EQ(Messages(g, options), std::vector<std::string>{});
}

TEST(ValidateTest, CheckValidSummarises) {
  std::string text;
  for (int i = 0; i < 12; ++i) {
    text += "node { name: \"n" + std::to_string(i) +
            "\" op: \"NoOp\" input: \"^missing\" }\n";
  }
  Graph g = GraphFromText(text);
  absl::Status s = CheckValid(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("invalid graph (12 problem(s))"),
            std::string::npos);
  EXPECT_NE(s.message().find("... and 2 more"), std::string::npos);
}

}  // namespace
// A Const TensorFlow would refuse (or abort on): a value of another dtype
// than the node's, a negative dimension, content that does not fit the
// shape, more values than elements.
TEST(ValidateTest, ConstValuesFitTheirShapeAndDtype) {
  Graph g = GraphFromText(R"(
node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 2 } } tensor_content: "\000\000\200?" } } } }
node { name: "d" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: -3 } } float_val: 1 } } } }
node { name: "e" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 1 } } float_val: 1 float_val: 2 } } } }
node { name: "ok" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 3 } } float_val: 1 } } } }
)");
  EXPECT_EQ(Messages(g),
            (std::vector<std::string>{
                "Const `c` has dtype int32 but its value is float32",
                "Const `c` holds 4 bytes of content; its shape needs 8",
                "Const `d` has a negative dimension (-3)",
                "Const `e` lists 2 values; its shape holds 1"}));
}

// What TensorFlow's importer checks of a node's attrs against its op: the
// required ones present, each of its declared kind, types among the
// allowed ones, counts at least their minimum. Like the importer, an attr
// the op does not have (`colour`) is accepted.
TEST(ValidateTest, AttrsAsTheImporterChecksThem) {
  Graph g = GraphFromText(R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "no_t" op: "Relu" input: "x" }
node { name: "extra" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "colour" value { s: "red" } } attr { key: "_hint" value { i: 1 } } }
node { name: "kind" op: "Relu" input: "x" attr { key: "T" value { s: "float" } } }
node { name: "str" op: "Relu" input: "x" attr { key: "T" value { type: DT_STRING } } }
node { name: "none" op: "AddN" attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "N" value { i: 0 } } }
)");
  EXPECT_EQ(
      Messages(g),
      (std::vector<std::string>{
          "`no_t` (Relu) has no attr `T`, which its op requires",
          "attr `T` of `kind` (Relu) is not a type",
          "attr `T` of `str` (Relu) is string, which its op does not take",
          "input 0 of `str` (Relu) expects string but `x` is float32",
          "attr `N` of `none` is 0; its op wants at least 1"}));
}

}  // namespace graft

#include "dialects/tf/function_body.h"

#include "gtest/gtest.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace graft {
namespace {

// y = split(x)[0] + split(x)[1]; a Split's list output, an arg read
// directly, a control output.
constexpr char kFunction[] = R"pb(
  signature {
    name: "halves"
    input_arg { name: "x" type: DT_FLOAT }
    output_arg { name: "y" type: DT_FLOAT }
    output_arg { name: "x_again" type: DT_FLOAT }
    control_output: "marker"
  }
  node_def {
    name: "axis" op: "Const"
    attr { key: "dtype" value { type: DT_INT32 } }
    attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } }
  }
  node_def {
    name: "split" op: "Split" input: "axis:output:0" input: "x"
    attr { key: "T" value { type: DT_FLOAT } }
    attr { key: "num_split" value { i: 2 } }
  }
  node_def {
    name: "add" op: "AddV2" input: "split:output:0" input: "split:output:1"
    attr { key: "T" value { type: DT_FLOAT } }
  }
  node_def { name: "marker" op: "NoOp" input: "^add" }
  ret { key: "y" value: "add:z:0" }
  ret { key: "x_again" value: "x" }
  control_ret { key: "marker" value: "marker" }
)pb";

tf::FunctionDef Parse(const std::string& text) {
  tf::FunctionDef f;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &f));
  return f;
}

TEST(FunctionBodyTest, NamesBecomeGraphNames) {
  tf::FunctionDef f = Parse(kFunction);
  absl::StatusOr<Graph> body = FunctionBodyGraph(f, {});
  ASSERT_TRUE(body.ok()) << body.status();
  const Node* add = body->FindNode("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(body->ExportInputs(add->id()).Get(0), "split");
  EXPECT_EQ(body->ExportInputs(add->id()).Get(1), "split:1");
  EXPECT_EQ(body->FindNode("x")->op(), "_Arg");
  const Node* y = body->FindNode(RetvalNodeName("y"));
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op(), "_Retval");
  EXPECT_EQ(body->ExportInputs(y->id()).Get(0), "add");
  EXPECT_EQ(body->ExportInputs(body->FindNode(RetvalNodeName("x_again"))->id())
                .Get(0),
            "x");
}

TEST(FunctionBodyTest, AnUntouchedBodyComesBackTheSame) {
  tf::FunctionDef f = Parse(kFunction);
  absl::StatusOr<Graph> body = FunctionBodyGraph(f, {});
  ASSERT_TRUE(body.ok()) << body.status();
  absl::StatusOr<tf::FunctionDef> back = FunctionFromBody(*body, f, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, f))
      << back->DebugString();
}

TEST(FunctionBodyTest, CallsToLibraryFunctionsUseTheirSignature) {
  tf::FunctionDefLibrary library;
  *library.add_function() = Parse(kFunction);
  tf::FunctionDef caller = Parse(R"pb(
    signature {
      name: "caller"
      input_arg { name: "a" type: DT_FLOAT }
      output_arg { name: "b" type: DT_FLOAT }
    }
    node_def { name: "call" op: "halves" input: "a" }
    ret { key: "b" value: "call:x_again:0" }
  )pb");
  absl::StatusOr<Graph> body = FunctionBodyGraph(caller, library);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->ExportInputs(body->FindNode(RetvalNodeName("b"))->id()).Get(0),
            "call:1");
  absl::StatusOr<tf::FunctionDef> back = FunctionFromBody(*body, caller, library);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ret().at("b"), "call:x_again:0");
}

TEST(FunctionBodyTest, BadNamesAreErrorsThatNameTheFunction) {
  tf::FunctionDef f = Parse(kFunction);
  (*f.mutable_ret())["y"] = "add:sum:0";  // AddV2's output is `z`
  absl::StatusOr<Graph> body = FunctionBodyGraph(f, {});
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("function `halves`"),
            std::string::npos)
      << body.status();
  EXPECT_NE(body.status().message().find("no output `sum:0`"),
            std::string::npos)
      << body.status();

  f = Parse(kFunction);
  (*f.mutable_node_def(1)->mutable_attr())["num_split"].set_placeholder("n");
  body = FunctionBodyGraph(f, {});
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("attr `num_split`"), std::string::npos)
      << body.status();

  f = Parse(kFunction);
  f.mutable_node_def(2)->set_op("NoSuchOp");
  body = FunctionBodyGraph(f, {});
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("neither TensorFlow's nor a library"),
            std::string::npos)
      << body.status();
}

TEST(FunctionBodyTest, ARewriteMayNotDropTheSignature) {
  tf::FunctionDef f = Parse(kFunction);
  absl::StatusOr<Graph> body = FunctionBodyGraph(f, {});
  ASSERT_TRUE(body.ok());
  // A body without `marker` (the control output) cannot be written back.
  tf::FunctionDef without = f;
  without.mutable_node_def()->RemoveLast();
  absl::StatusOr<Graph> smaller = FunctionBodyGraph(without, {});
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  absl::StatusOr<tf::FunctionDef> back = FunctionFromBody(*smaller, f, {});
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("control output"), std::string::npos);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// A chain of calls as deep as a hostile file can make (f0 calls f1 calls
// ... f199999) is ordered without recursion, callers first; a cycle gives
// no order.
TEST(CallOrderTest, ADeepChainOfCallsNeverOverflowsTheStack) {
  constexpr int kDepth = 200000;
  tf::FunctionDefLibrary library;
  for (int i = 0; i < kDepth; ++i) {
    tf::FunctionDef* f = library.add_function();
    f->mutable_signature()->set_name("f" + std::to_string(i));
    if (i + 1 < kDepth) {
      tf::NodeDef* call = f->add_node_def();
      call->set_name("c");
      call->set_op("PartitionedCall");
      (*call->mutable_attr())["f"].mutable_func()->set_name("f" + std::to_string(i + 1));
    }
  }
  FunctionsByName by_name;
  for (const tf::FunctionDef& f : library.function()) by_name[f.signature().name()] = &f;
  std::vector<const tf::FunctionDef*> order = CallOrder(by_name);
  ASSERT_EQ(order.size(), static_cast<size_t>(kDepth));
  EXPECT_EQ(order.front()->signature().name(), "f0");
  EXPECT_EQ(order.back()->signature().name(), "f" + std::to_string(kDepth - 1));
  // The last one calls the first: a cycle.
  tf::NodeDef* back = library.mutable_function(kDepth - 1)->add_node_def();
  back->set_name("c");
  back->set_op("PartitionedCall");
  (*back->mutable_attr())["f"].mutable_func()->set_name("f0");
  EXPECT_TRUE(CallOrder(by_name).empty());
}

}  // namespace
}  // namespace graft

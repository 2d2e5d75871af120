#include "dialects/graph_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "engine/rewriter.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::google::protobuf::util::MessageDifferencer;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string Slurp(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// No temporary files left beside an output that failed to write.
int CountEntriesStartingWith(const std::string& dir, const std::string& stem) {
  int count = 0;
  std::string cmd = "ls '" + dir + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char line[4096];
  while (p != nullptr && fgets(line, sizeof(line), p) != nullptr) {
    if (std::string(line).rfind(stem, 0) == 0) ++count;
  }
  if (p != nullptr) pclose(p);
  return count;
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, BinaryLoadSaveIsByteIdentical) {
  const std::string path = GetParam();
  std::string original = Slurp(path);
  absl::StatusOr<Graph> graph = LoadGraph(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_GT(graph->num_nodes(), 0);
  EXPECT_EQ(SerializeGraph(*graph, GraphFormat::kBinary), original);
}

TEST_P(RoundTripTest, TextRoundTripKeepsTheSameGraph) {
  absl::StatusOr<Graph> graph = LoadGraph(GetParam());
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::string text = SerializeGraph(*graph, GraphFormat::kText);
  absl::StatusOr<Graph> again = ParseGraph(text, GraphFormat::kText, "x.pbtxt");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(
      MessageDifferencer::Equals(graph->ToGraphDef(), again->ToGraphDef()));
  // Text output is canonical: printing again gives the same text.
  EXPECT_EQ(SerializeGraph(*again, GraphFormat::kText), text);
  // And text -> binary gives a graph equal to the original.
  absl::StatusOr<Graph> binary =
      ParseGraph(SerializeGraph(*again, GraphFormat::kBinary),
                 GraphFormat::kBinary, "x.pb");
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_TRUE(
      MessageDifferencer::Equals(graph->ToGraphDef(), binary->ToGraphDef()));
}

INSTANTIATE_TEST_SUITE_P(TensorflowExports, RoundTripTest,
                         ::testing::Values("examples/keras_cnn.pb",
                                           "tests/data/control_devices.pb"));

TEST(GraphIoTest, TextExportOfTensorflowEqualsItsBinaryExport) {
  absl::StatusOr<Graph> text = LoadGraph("tests/data/control_devices.pbtxt");
  absl::StatusOr<Graph> binary = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(text.ok()) << text.status();
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_TRUE(
      MessageDifferencer::Equals(text->ToGraphDef(), binary->ToGraphDef()));
  const Node* bn = binary->FindNode("bn");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->op(), "FusedBatchNormV3");
  const Node* sum = binary->FindNode("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->device(), "/job:localhost/replica:0/task:0/device:CPU:0");
  ASSERT_EQ(sum->control_inputs().size(), 1u);
  EXPECT_EQ(binary->node(sum->control_inputs()[0]).name(), "init");
  // Split is multi-output: both ports have consumers. Unique's port 0 feeds
  // a Cast and the node itself a control edge.
  EXPECT_EQ(binary->FindNode("split")->num_used_ports(), 2);
  const Node* unique = binary->FindNode("unique");
  EXPECT_EQ(unique->num_used_ports(), 1);
  ASSERT_EQ(unique->control_consumers().size(), 1u);
  EXPECT_EQ(binary->node(unique->control_consumers()[0]).name(), "out");
}

TEST(GraphIoTest, RewriteChangesOnlyTheBytesOfTouchedNodes) {
  absl::StatusOr<Graph> graph = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(graph.ok()) << graph.status();
  Rewriter rewriter(*graph);
  ASSERT_TRUE(rewriter.SetDevice(graph->FindId("x"), "/device:CPU:0").ok());
  NodeSpec spec;
  spec.name = "extra";
  spec.op = "Identity";
  spec.inputs = {{graph->FindId("sum"), 0}};
  absl::StatusOr<NodeId> extra = rewriter.AddNode(spec);
  ASSERT_TRUE(extra.ok()) << extra.status();
  ASSERT_TRUE(rewriter.RemoveNode(graph->FindId("uniq_f")).ok());
  std::string bytes = SerializeGraph(*graph, GraphFormat::kBinary);
  absl::StatusOr<Graph> reloaded =
      ParseGraph(bytes, GraphFormat::kBinary, "x.pb");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->num_nodes(), graph->num_nodes());
  EXPECT_EQ(reloaded->FindNode("x")->device(), "/device:CPU:0");
  EXPECT_FALSE(reloaded->Contains("uniq_f"));
  ASSERT_TRUE(reloaded->Contains("extra"));
  EXPECT_EQ(reloaded->TensorName(reloaded->FindNode("extra")->input(0)), "sum");
  // Untouched nodes keep their exact bytes.
  std::string sum_bytes;
  graph->FindNode("sum")->def().SerializeToString(&sum_bytes);
  EXPECT_NE(bytes.find(sum_bytes), std::string::npos);
  // The new node lands after the source's last node, before the versions.
  tf::GraphDef def;
  ASSERT_TRUE(def.ParseFromString(bytes));
  EXPECT_EQ(def.node(def.node_size() - 1).name(), "extra");
  EXPECT_TRUE(def.has_versions());
}

TEST(GraphIoTest, SaveWritesAtomicallyAndReadsBack) {
  absl::StatusOr<Graph> graph = LoadGraph("examples/keras_cnn.pb");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::string out = TempDir() + "/saved.pbtxt";
  ASSERT_TRUE(SaveGraph(*graph, out).ok());
  absl::StatusOr<Graph> back = LoadGraph(out);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(
      MessageDifferencer::Equals(graph->ToGraphDef(), back->ToGraphDef()));
  EXPECT_EQ(CountEntriesStartingWith(TempDir(), "saved.pbtxt.tmp"), 0);
}

TEST(GraphIoTest, FormatFromExtensionOrOverride) {
  EXPECT_EQ(ResolveGraphFormat("a.pbtxt", GraphFormat::kAuto),
            GraphFormat::kText);
  EXPECT_EQ(ResolveGraphFormat("A.PBTXT", GraphFormat::kAuto),
            GraphFormat::kText);
  EXPECT_EQ(ResolveGraphFormat("a.pb", GraphFormat::kAuto),
            GraphFormat::kBinary);
  EXPECT_EQ(ResolveGraphFormat("a", GraphFormat::kAuto), GraphFormat::kBinary);
  EXPECT_EQ(ResolveGraphFormat("a.pb", GraphFormat::kText), GraphFormat::kText);
  EXPECT_EQ(*ParseGraphFormat("pbtxt"), GraphFormat::kText);
  EXPECT_EQ(*ParseGraphFormat("pb"), GraphFormat::kBinary);
  EXPECT_EQ(*ParseGraphFormat("onnx"), GraphFormat::kOnnx);
  EXPECT_EQ(ResolveGraphFormat("m.ONNX", GraphFormat::kAuto), GraphFormat::kOnnx);
  EXPECT_FALSE(ParseGraphFormat("caffe").ok());
}

// ---- bad input ----

TEST(GraphIoBadInputTest, MissingFile) {
  absl::StatusOr<Graph> g = LoadGraph(TempDir() + "/missing.pb");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            TempDir() + "/missing.pb: error: no such file");
}

TEST(GraphIoBadInputTest, DirectoryInsteadOfFile) {
  absl::StatusOr<Graph> g = LoadGraph(TempDir());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            TempDir() + ": error: is a directory, expected a graph file");
}

TEST(GraphIoBadInputTest, TruncatedBinary) {
  std::string bytes = Slurp("examples/keras_cnn.pb");
  std::string path = TempDir() + "/truncated.pb";
  WriteRaw(path, bytes.substr(0, bytes.size() / 2));
  absl::StatusOr<Graph> g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(path + ": error: not a valid binary "
                                             "GraphDef: node #"),
            std::string::npos)
      << g.status();
  EXPECT_NE(g.status().message().find("is truncated at byte"),
            std::string::npos);
}

TEST(GraphIoBadInputTest, GarbledBinary) {
  std::string path = TempDir() + "/garbled.pb";
  WriteRaw(path,
           std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11));
  absl::StatusOr<Graph> g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(
      g.status().message().find(path + ": error: not a valid binary GraphDef"),
      std::string::npos)
      << g.status();
  // A node field whose payload is not a NodeDef.
  WriteRaw(path, std::string("\x0a\x03\xff\xff\xff", 5));
  g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            path +
                ": error: not a valid binary GraphDef: node #0 does not "
                "parse at byte 0");
}

TEST(GraphIoBadInputTest, TextGivenAsBinaryGetsAHint) {
  std::string path = TempDir() + "/text_named.pb";
  WriteRaw(path, "node { name: \"a\" op: \"NoOp\" }\n");
  absl::StatusOr<Graph> g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("--format=pbtxt"), std::string::npos)
      << g.status();
  EXPECT_TRUE(LoadGraph(path, GraphFormat::kText).ok());
}

TEST(GraphIoBadInputTest, TextSyntaxErrorHasLineAndColumn) {
  std::string path = TempDir() + "/bad.pbtxt";
  WriteRaw(path, "node {\n  name: \"a\"\n  op: NoOp\n}\n");
  absl::StatusOr<Graph> g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message().substr(0, path.size() + 13),
            path + ":3:7: error: ")
      << g.status();
  WriteRaw(path, "node {\n  name: \"a\"\n  colour: 3\n}\n");
  g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(":3:"), std::string::npos) << g.status();
  EXPECT_NE(g.status().message().find("colour"), std::string::npos);
}

TEST(GraphIoBadInputTest, DuplicateNamesAreLocated) {
  std::string path = TempDir() + "/dup.pbtxt";
  WriteRaw(
      path,
      "node { name: \"a\" op: \"NoOp\" }\nnode { name: \"a\" op: \"NoOp\" }\n");
  absl::StatusOr<Graph> g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(),
            path + ": error: duplicate node name `a` (nodes #0 and #1)");
}

TEST(GraphIoBadInputTest, OutputInMissingFolderWritesNothing) {
  absl::StatusOr<Graph> graph = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(graph.ok());
  std::string out = TempDir() + "/no/such/dir/out.pb";
  absl::Status s = SaveGraph(*graph, out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), out + ": error: cannot write: folder `" + TempDir() +
                             "/no/such/dir` does not exist");
  EXPECT_FALSE(Exists(out));
}

TEST(GraphIoBadInputTest, OutputThatIsADirectory) {
  absl::StatusOr<Graph> graph = LoadGraph("tests/data/control_devices.pb");
  ASSERT_TRUE(graph.ok());
  absl::Status s = SaveGraph(*graph, TempDir());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is a directory"), std::string::npos);
}

TEST(GraphIoTest, LoadsNodesLargerThanProtobufDefaultLimit) {
  // One Const of 80 MB: above protobuf's old 64 MB default message limit.
  tf::GraphDef def;
  tf::NodeDef* big = def.add_node();
  big->set_name("big");
  big->set_op("Const");
  tf::TensorProto* t = (*big->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tf::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(20 << 20);
  t->mutable_tensor_content()->assign(80u << 20, '\x01');
  std::string bytes;
  ASSERT_TRUE(def.SerializeToString(&bytes));
  absl::StatusOr<Graph> g = ParseGraph(bytes, GraphFormat::kBinary, "big.pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindNode("big")->value_content().size(), 80u << 20);
  EXPECT_EQ(SerializeGraph(*g, GraphFormat::kBinary), bytes);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// Large graphs parse on several threads; the result must not show it.
TEST(GraphIoTest, ParallelParseKeepsOrderAndReportsTheRightNode) {
  constexpr int kNodes = 120000;
  tf::GraphDef def;
  for (int i = 0; i < kNodes; ++i) {
    tf::NodeDef* n = def.add_node();
    n->set_name("n" + std::to_string(i));
    n->set_op(i == 0 ? "Placeholder" : "Identity");
    if (i > 0) n->add_input("n" + std::to_string(i - 1));
  }
  std::string bytes;
  ASSERT_TRUE(def.SerializeToString(&bytes));
  absl::StatusOr<Graph> g = ParseGraph(bytes, GraphFormat::kBinary, "big.pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->num_nodes(), kNodes);
  EXPECT_EQ(g->node(99999).name(), "n99999");
  EXPECT_EQ(g->TensorName(g->node(99999).input(0)), "n99998");
  EXPECT_EQ(SerializeGraph(*g, GraphFormat::kBinary), bytes);

  // Garble the payload of node #100000: its name field claims 127 bytes.
  std::string node_bytes;
  def.node(100000).SerializeToString(&node_bytes);
  size_t at = bytes.find(node_bytes);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = '\x7f';
  g = ParseGraph(bytes, GraphFormat::kBinary, "big.pb");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("node #100000 does not parse"),
            std::string::npos)
      << g.status();
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// A mapped binary source saves through every path: large unmodified nodes
// copied file to file, small ones gathered, modified and new ones
// re-encoded; the result equals the in-memory serialization.
TEST(GraphIoTest, StreamedSaveOfAMappedSourceEqualsSerialization) {
  tf::GraphDef def;
  for (const char* name : {"big_a", "small", "big_b"}) {
    tf::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op("Const");
    tf::AttrValue value;
    value.mutable_tensor()->set_dtype(tf::DT_FLOAT);
    int64_t count = std::string(name) == "small" ? 4 : 40000;  // 160 KB
    value.mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(count);
    value.mutable_tensor()->set_tensor_content(std::string(count * 4, name[4]));
    (*n->mutable_attr())["value"] = value;
    (*n->mutable_attr())["dtype"].set_type(tf::DT_FLOAT);
  }
  def.mutable_versions()->set_producer(1);
  std::string in = TempDir() + "/mapped.pb";
  std::ofstream(in, std::ios::binary) << def.SerializeAsString();
  absl::StatusOr<Graph> graph = LoadGraph(in);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_GE(graph->source_fd(), 0);
  std::string out = TempDir() + "/streamed.pb";
  ASSERT_TRUE(SaveGraph(*graph, out).ok());
  std::ifstream unchanged(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(unchanged)), {});
  EXPECT_EQ(bytes, def.SerializeAsString());
  Rewriter rewriter(*graph);
  ASSERT_TRUE(rewriter.SetDevice(graph->FindId("big_b"), "/device:CPU:0").ok());
  ASSERT_TRUE(SaveGraph(*graph, out).ok());
  std::ifstream changed(out, std::ios::binary);
  bytes.assign((std::istreambuf_iterator<char>(changed)), {});
  EXPECT_EQ(bytes, SerializeGraph(*graph, GraphFormat::kBinary));
  EXPECT_NE(bytes, def.SerializeAsString());
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

tf::NodeDef ConstNodeDef(const std::string& name, int64_t count, char fill) {
  tf::NodeDef n;
  n.set_name(name);
  n.set_op("Const");
  n.set_device("/device:CPU:0");
  tf::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tf::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(count);
  std::string content(static_cast<size_t>(count) * 4, fill);
  for (size_t i = 0; i < content.size(); i += 7) content[i] = char(i % 251);
  t->set_tensor_content(content);
  (*n.mutable_attr())["dtype"].set_type(tf::DT_FLOAT);
  return n;
}

// A large constant's bytes stay in the source; every way of reading the
// graph still sees them, and edits keep or drop them as they should.
TEST(GraphIoTest, LargeConstantsStayInTheSourceAndEveryReaderSeesThem) {
  tf::GraphDef def;
  *def.add_node() = ConstNodeDef("w", 4096, 'w');  // 16 KiB: left in place
  *def.add_node() = ConstNodeDef("s", 4, 's');     // small: parsed
  // Two `value` entries (the last wins): parsed as it is, not split.
  tf::NodeDef twice = ConstNodeDef("twice", 4096, 'a');
  std::string twice_bytes =
      twice.SerializeAsString() +
      ConstNodeDef("twice", 4096, 'b').SerializeAsString();
  ASSERT_TRUE(twice.ParseFromString(twice_bytes));
  tf::NodeDef* id = def.add_node();
  id->set_name("id");
  id->set_op("Identity");
  id->add_input("w");
  std::string bytes = SerializeDeterministic(def);
  // Append `twice` by hand: its bytes hold two `value` entries.
  bytes.push_back(static_cast<char>((1 << 3) | 2));
  for (uint64_t v = twice_bytes.size();; v >>= 7) {
    bytes.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    if (v < 0x80) break;
  }
  bytes += twice_bytes;
  *def.add_node() = twice;

  absl::StatusOr<Graph> g = ParseGraph(bytes, GraphFormat::kBinary, "w.pb");
  ASSERT_TRUE(g.ok()) << g.status();
  const Node& w = *g->FindNode("w");
  EXPECT_TRUE(w.value_content_apart());
  EXPECT_TRUE(w.attr("value")->tensor().tensor_content().empty());
  EXPECT_EQ(w.value_content(),
            def.node(0).attr().at("value").tensor().tensor_content());
  EXPECT_FALSE(g->FindNode("s")->value_content_apart());
  EXPECT_FALSE(g->FindNode("twice")->value_content_apart());
  EXPECT_EQ(g->FindNode("twice")->value_content(),
            twice.attr().at("value").tensor().tensor_content());

  // Whole NodeDefs, text and binary saves all carry the bytes.
  EXPECT_TRUE(
      MessageDifferencer::Equals(g->ExportNodeDef(w.id()), def.node(0)));
  EXPECT_TRUE(MessageDifferencer::Equals(g->ToGraphDef(), def));
  EXPECT_EQ(SerializeGraph(*g, GraphFormat::kBinary), bytes);
  absl::StatusOr<Graph> text = ParseGraph(
      SerializeGraph(*g, GraphFormat::kText), GraphFormat::kText, "w.pbtxt");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(MessageDifferencer::Equals(text->ToGraphDef(), def));

  // A modified node is re-encoded with its bytes; a clone shares them.
  Rewriter rewriter(*g);
  ASSERT_TRUE(rewriter.SetDevice(w.id(), "/device:GPU:0").ok());
  absl::StatusOr<CloneResult> clone = rewriter.Clone({w.id()}, {}, "copy/");
  ASSERT_TRUE(clone.ok()) << clone.status();
  tf::GraphDef saved;
  ASSERT_TRUE(saved.ParseFromString(SerializeGraph(*g, GraphFormat::kBinary)));
  tf::NodeDef expected = def.node(0);
  expected.set_device("/device:GPU:0");
  EXPECT_TRUE(MessageDifferencer::Equals(saved.node(0), expected));
  expected.set_name("copy/w");
  EXPECT_TRUE(
      MessageDifferencer::Equals(saved.node(saved.node_size() - 1), expected));

  // A new node holding its own large tensor, attrs on both sides of
  // `value`: its content too is passed on apart, with the same bytes as a
  // whole-message serialization.
  NodeSpec spec;
  spec.name = "fresh";
  spec.op = "Const";
  spec.attrs = def.node(0).attr();
  spec.attrs["zz_after"].set_i(7);
  spec.attrs["_before"].set_s("x");
  absl::StatusOr<NodeId> fresh = rewriter.AddNode(spec);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(g->node(*fresh).value_content_apart());
  // (`twice` is not in canonical form: without it, the whole graph is.)
  ASSERT_TRUE(rewriter.RemoveNode(g->FindId("twice")).ok());
  std::string canonical = SerializeDeterministic(g->ToGraphDef());
  EXPECT_TRUE(SerializeGraph(*g, GraphFormat::kBinary) == canonical);
  std::string out = TempDir() + "/apart.pb";
  ASSERT_TRUE(SaveGraph(*g, out).ok());
  EXPECT_TRUE(Slurp(out) == canonical);

  // Setting the value drops the kept bytes; rolling back restores them.
  rewriter.Begin();
  tf::AttrValue small = def.node(1).attr().at("value");
  ASSERT_TRUE(rewriter.SetAttr(w.id(), "value", small).ok());
  EXPECT_FALSE(w.value_content_apart());
  EXPECT_EQ(w.value_content(), small.tensor().tensor_content());
  rewriter.Rollback();
  EXPECT_TRUE(w.value_content_apart());
  EXPECT_EQ(w.value_content(),
            def.node(0).attr().at("value").tensor().tensor_content());
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// Wire-format pieces, for node bytes in orders a serializer would not write.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(int number, const std::string& payload) {
  return Varint((static_cast<uint64_t>(number) << 3) | 2) +
         Varint(payload.size()) + payload;
}

// Valid but unusual encodings of a large constant: each loads to the same
// NodeDef protobuf parses from the bytes, whether its content is kept apart
// or not, and saves back byte for byte.
TEST(GraphIoTest, UnusualEncodingsOfALargeConstantLoadAsProtobufReadsThem) {
  std::string content(8192, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = char(i * 31 % 251);
  tf::TensorShapeProto shape;
  shape.add_dim()->set_size(2048);
  std::string dtype = Varint(1 << 3) + Varint(tf::DT_FLOAT);  // field 1
  std::string shape_field = Field(2, shape.SerializeAsString());
  std::string content_field = Field(4, content);
  std::string float_val = Field(5, std::string(4, '\0'));  // packed 0.0f
  auto node = [&](const std::string& tensor, bool value_first) {
    std::string attr_value = Field(8, tensor);
    std::string entry = value_first ? Field(2, attr_value) + Field(1, "value")
                                    : Field(1, "value") + Field(2, attr_value);
    return Field(1, "w") + Field(2, "Const") + Field(5, entry);
  };
  struct Case {
    const char* name;
    std::string node;
    bool apart;
  };
  std::vector<Case> cases = {
      {"canonical", node(dtype + shape_field + content_field, false), true},
      {"value before key", node(dtype + shape_field + content_field, true),
       true},
      {"content first", node(content_field + dtype + shape_field, false), true},
      {"content and typed values",
       node(dtype + shape_field + content_field + float_val, false), true},
      {"content twice",
       // protobuf keeps the last one
       node(dtype + shape_field + Field(4, std::string(8192, 'x')) +
                content_field,
            false),
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bytes = Field(1, c.node);
    tf::NodeDef expected;
    ASSERT_TRUE(expected.ParseFromString(c.node));
    absl::StatusOr<Graph> g = ParseGraph(bytes, GraphFormat::kBinary, "w.pb");
    ASSERT_TRUE(g.ok()) << g.status();
    const Node& w = *g->FindNode("w");
    EXPECT_EQ(w.value_content_apart() != nullptr, c.apart);
    EXPECT_TRUE(w.value_content() == content);
    EXPECT_TRUE(MessageDifferencer::Equals(g->ExportNodeDef(w.id()), expected));
    EXPECT_TRUE(SerializeGraph(*g, GraphFormat::kBinary) == bytes);
    // Modified: re-encoded in canonical form, still the same message.
    Rewriter rewriter(*g);
    ASSERT_TRUE(rewriter.SetDevice(w.id(), "/device:CPU:0").ok());
    tf::GraphDef saved;
    ASSERT_TRUE(
        saved.ParseFromString(SerializeGraph(*g, GraphFormat::kBinary)));
    expected.set_device("/device:CPU:0");
    EXPECT_TRUE(MessageDifferencer::Equals(saved.node(0), expected));
  }
}

}  // namespace
}  // namespace graft

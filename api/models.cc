// Models as library calls: load, stats, convert, validate, diff; reports
// as JSON.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <tuple>

#include "absl/strings/match.h"
#include "dialects/tf/tf_ops.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/shapes.h"
#include "api/graft.h"
#include "draw/diff_drawing.h"
#include "dialects/tf/freeze.h"
#include "engine/graph_diff.h"
#include "engine/graph_stats.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/op_registry.h"
#include "dialects/tf/saved_model.h"
#include "engine/validate.h"
#include "google/protobuf/util/json_util.h"

namespace graft::api {

Model Model::File(std::string path, GraphFormat format) {
  Model m;
  m.path = std::move(path);
  m.format = format;
  return m;
}

Model Model::Bytes(std::string bytes, GraphFormat format, std::string name) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  absl::string_view view(*owned);
  return View(std::move(owned), view, format, std::move(name));
}

Model Model::View(std::shared_ptr<const void> owner, absl::string_view bytes,
                  GraphFormat format, std::string name) {
  Model m;
  m.path = std::move(name);
  m.owner = std::move(owner);
  m.bytes = bytes;
  m.in_memory = true;
  m.format = format;
  return m;
}

Result<Graph> Load(const Model& model, bool freeze_by_default,
                   report::FreezeReport* frozen) {
  const SavedModelRead& read = model.saved_model;
  bool saved_model = !model.in_memory && IsSavedModelDir(model.path);
  if (!saved_model && (read.tag != "serve" || !read.signatures.empty() ||
                       read.mode != SavedModelMode::kAuto))
    return Error::Usage(absl::StrCat(
        model.path, ": error: --tag, --signature and --saved-model choose how "
                    "a SavedModel folder is read; this is not one"));
  if (saved_model && !read.signatures.empty() &&
      !read.Freezes(freeze_by_default))
    return Error::Usage(absl::StrCat(
        model.path, ": error: --signature chooses the signatures a frozen "
                    "SavedModel keeps; read in place it keeps them all (add "
                    "--saved-model freeze)"));
  if (saved_model) {
    SavedModelReading reading;
    reading.tag = read.tag;
    reading.signatures = read.signatures;
    reading.freeze = read.Freezes(freeze_by_default);
    FreezeSummary summary;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Graph> graph = ReadSavedModel(model.path, reading, &summary);
    if (!graph.ok()) return Error::From(graph.status());
    if (frozen != nullptr && reading.freeze) {
      for (const std::string& s : summary.signatures) frozen->add_signatures(s);
      frozen->set_calls_inlined(summary.calls_inlined);
      frozen->set_identities_bypassed(summary.identities_bypassed);
      frozen->set_variables(summary.variables);
      frozen->set_variable_bytes(summary.variable_bytes);
      frozen->set_functions_kept(summary.functions_kept);
      frozen->set_ms(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count());
    }
    return *std::move(graph);
  }
  absl::StatusOr<Graph> graph =
      model.in_memory
          ? (model.bytes.empty() && !model.allow_empty
                 ? absl::InvalidArgumentError(absl::StrCat(
                       model.path, ": error: is empty (0 bytes), not a graph"))
                 : ParseGraphView(model.owner, model.bytes, model.format,
                                  model.path))
          : LoadGraph(model.path, model.format, model.allow_empty);
  if (!graph.ok()) return Error::From(graph.status());
  return *std::move(graph);
}

namespace {

bool SamePath(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string FormatName(GraphFormat format) {
  return format == GraphFormat::kText   ? "pbtxt"
         : format == GraphFormat::kOnnx ? "onnx"
                                        : "pb";
}

}  // namespace

Result<std::string> Save(const Graph& graph, const Output& out) {
  if (out.path.empty() && SavedModelOf(graph) != nullptr &&
      RestoresVariables(*SavedModelOf(graph)))
    return Error::Usage(
        "error: a SavedModel with variables is written as a folder (give an "
        "output path), or frozen (--saved-model freeze) as GraphDef bytes");
  if (out.path.empty() && OnnxOf(graph) != nullptr &&
      out.format != GraphFormat::kText) {
    absl::StatusOr<std::string> bytes = SerializeOnnx(graph);  // a cycle: said
    if (!bytes.ok()) return Error::Input(absl::StrCat("error: ", bytes.status().message()));
    return *std::move(bytes);
  }
  if (out.path.empty())
    return SerializeGraph(graph, out.format == GraphFormat::kText
                                     ? GraphFormat::kText
                                     : GraphFormat::kBinary);
  absl::Status saved = SaveGraph(graph, out.path, out.format);
  if (!saved.ok()) return Error::From(saved);
  return std::string();
}

Error RefuseOverwrite(const Model& model, const Output& out, bool in_place) {
  if (in_place || model.in_memory || out.path.empty() ||
      !SamePath(model.path, out.path))
    return {};
  return Error::Usage(absl::StrCat(out.path,
                                   ": error: refusing to overwrite the input; "
                                   "pass --in-place to replace it"));
}

Result<report::GraphStats> Stats(const Model& model) {
  Result<Graph> graph = Load(model);
  if (!graph.ok()) return graph.error();
  report::GraphStats stats = ComputeGraphStats(*graph);
  int64_t size = static_cast<int64_t>(model.bytes.size());
  struct stat info;
  if (!model.in_memory && stat(model.path.c_str(), &info) == 0)
    size = info.st_size;
  stats.set_path(model.path);
  stats.set_format(FormatName(ResolveGraphFormat(model.path, model.format)));
  if (SavedModelOf(*graph) != nullptr) {  // the folder's files, all of them
    stats.set_format("saved_model");
    size = 0;
    std::error_code ec;
    for (const auto& f :
         std::filesystem::recursive_directory_iterator(model.path, ec)) {
      if (f.is_regular_file(ec)) size += static_cast<int64_t>(f.file_size(ec));
    }
  }
  stats.set_size_bytes(size);
  return stats;
}

Result<Converted> Convert(const Model& model, const Output& out,
                          bool in_place) {
  if (Error e = RefuseOverwrite(model, out, in_place); !e.message.empty())
    return e;
  Result<Graph> graph = Load(model);
  if (!graph.ok()) return graph.error();
  Result<std::string> saved = Save(*graph, out);
  if (!saved.ok()) return saved.error();
  bool folder = SavedModelOf(*graph) != nullptr && !out.path.empty() &&
                out.format == GraphFormat::kAuto &&
                !absl::EndsWith(out.path, ".pb") &&
                !absl::EndsWith(out.path, ".pbtxt");
  std::string format = folder
                           ? "saved_model"
                           : FormatName(ResolveGraphFormat(out.path, out.format));
  return Converted{*std::move(saved), graph->num_nodes(), format};
}

Result<Frozen> Freeze(const Model& model) {
  if (model.in_memory || !IsSavedModelDir(model.path))
    return Error::Input(absl::StrCat(model.path,
                                     ": error: not a SavedModel folder"));
  if (model.saved_model.mode == SavedModelMode::kInPlace)
    return Error::Usage(absl::StrCat(model.path,
                                     ": error: freezing, not in place"));
  Frozen out;
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true, &out.report);
  if (!graph.ok()) return graph.error();
  out.bytes = SerializeGraph(*graph, GraphFormat::kBinary);
  const tf::MetaGraphDef& meta = SavedModelOf(*graph)->proto.meta_graphs(0);
  std::map<std::string, const tf::SignatureDef*> sorted;
  for (const auto& [key, def] : meta.signature_def()) {
    if (key != "__saved_model_init_op") sorted[key] = &def;
  }
  for (const auto& [key, def] : sorted) {
    SignatureTensors s;
    s.key = key;
    std::map<std::string, std::string> inputs;
    for (const auto& [name, info] : def->inputs()) inputs[name] = info.name();
    std::map<std::string, std::string> outputs;
    for (const auto& [name, info] : def->outputs()) outputs[name] = info.name();
    s.inputs.assign(inputs.begin(), inputs.end());
    s.outputs.assign(outputs.begin(), outputs.end());
    out.signatures.push_back(std::move(s));
  }
  return out;
}

Result<std::string> SaveAsSavedModel(const Model& model, const std::string& dir,
                                     const SignatureTensors& signature) {
  if (signature.inputs.empty() || signature.outputs.empty())
    return Error::Usage(absl::StrCat(
        dir, ": error: a signature needs its inputs and outputs (tensor "
             "names)"));
  Result<Graph> graph = Load(model, /*freeze_by_default=*/true);
  if (!graph.ok()) return graph.error();
  absl::Status saved = SaveFrozenSavedModel(*graph, dir, signature);
  if (!saved.ok()) return Error::From(saved);
  return dir;
}

Result<report::Validation> Validate(const Model& model,
                                    const ValidateOptions& options) {
  Result<Graph> graph = Load(model);
  if (!graph.ok()) return graph.error();
  graft::ValidateOptions validate;
  validate.outputs = options.outputs;
  validate.custom_ops = options.custom_ops;
  std::vector<ValidationIssue> issues = graft::Validate(*graph, validate);
  // TensorFlow's importer also runs its shape functions: shapes that
  // conflict where both sides are known.
  if (issues.empty()) {
    analysis::ShapeMap shapes = analysis::InferShapes(*graph);
    for (auto& [id, message] : analysis::ShapeConflicts(*graph, shapes))
      issues.push_back({id, std::move(message)});
  }
  // A SavedModel's variables: every tensor read, its checksum checked.
  if (SavedModelOf(*graph) != nullptr && SavedModelOf(*graph)->variables) {
    const TensorBundle& bundle = *SavedModelOf(*graph)->variables;
    for (const auto& [key, entry] : bundle.index().entries) {
      absl::StatusOr<std::string> bytes = bundle.ReadTensor(key);
      if (!bytes.ok()) issues.push_back({kNoNode, std::string(bytes.status().message())});
    }
  }
  report::Validation result;
  result.set_path(model.path);
  result.set_valid(issues.empty());
  result.set_nodes(graph->num_nodes());
  for (const ValidationIssue& issue : issues) result.add_problems(issue.message);
  return result;
}

Result<Diffed> Diff(const Model& before, const Model& after,
                    const DiffOptions& options) {
  Result<Graph> a = Load(before);
  if (!a.ok()) return a.error();
  Result<Graph> b = Load(after);
  if (!b.ok()) return b.error();
  // A SavedModel against its frozen rewrite (or a frozen GraphDef): the
  // SavedModel is compared frozen too, unless its mode was given.
  auto restores = [](const Graph& g) {
    return SavedModelOf(g) != nullptr && RestoresVariables(*SavedModelOf(g));
  };
  for (auto [side, other, model] : {std::make_tuple(&a, &b, &before),
                                    std::make_tuple(&b, &a, &after)}) {
    if (restores(**side) && !restores(**other) &&
        model->saved_model.mode == SavedModelMode::kAuto) {
      *side = Load(*model, /*freeze_by_default=*/true);
      if (!side->ok()) return side->error();
    }
  }
  graft::DiffOptions diff_options;
  diff_options.full = options.full;
  GraphDiff diff = DiffGraphs(*a, *b, diff_options);
  Diffed out;
  out.differs = !diff.empty();
  if (options.format == "dot") {
    out.text = FormatDiffDot(*a, *b, diff);
  } else if (options.format == "html") {
    draw::DrawingOptions drawing;
    drawing.context = options.context;
    drawing.full = options.full;
    absl::StatusOr<std::string> page = draw::DiffPage(*a, *b, diff, drawing);
    if (!page.ok())
      return Error::Input(absl::StrCat("error: ", page.status().message()));
    out.text = *std::move(page);
  } else {
    out.text = FormatDiffText(diff);
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& message, bool all_fields) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = all_fields;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string QuoteJson(const std::string& s) { return Quote(s); }

std::string ExplainedJson(const std::vector<ExplainedRule>& explained) {
  std::vector<std::string> rules;
  for (const ExplainedRule& r : explained) {
    std::vector<std::string> at;
    for (const Explanation& e : r.at) {
      std::vector<std::string> bindings;
      for (const auto& [name, value] : e.bindings)
        bindings.push_back(absl::StrCat(Quote(name), ": ", Quote(value)));
      at.push_back(absl::StrCat(
          "{\"node\": ", Quote(e.node), ", \"function\": ", Quote(e.function),
          ", \"matched\": ",
          e.matched ? "true" : "false", ", \"reason\": ", Quote(e.reason),
          ", \"bindings\": {", absl::StrJoin(bindings, ", "), "}}"));
    }
    rules.push_back(absl::StrCat("{\"rule\": ", Quote(r.rule), ", \"at\": [",
                                 absl::StrJoin(at, ", "), "]}"));
  }
  return absl::StrCat("[", absl::StrJoin(rules, ",\n "), "]\n");
}

std::string RuleTestsJson(const std::vector<RuleTest>& tests) {
  std::vector<std::string> items;
  for (const RuleTest& t : tests) {
    items.push_back(absl::StrCat("{\"name\": ", Quote(t.name),
                                 ", \"passed\": ",
                                 t.failure.empty() ? "true" : "false",
                                 ", \"failure\": ", Quote(t.failure), "}"));
  }
  return absl::StrCat("[", absl::StrJoin(items, ",\n "), "]\n");
}

std::string Version() {
  return absl::StrCat("graft 0.1.0 (TensorFlow op signatures: ",
                      TensorflowOps().size(), " ops)");
}

}  // namespace graft::api

#include "dialects/tf/saved_model.h"
#include "dialects/tf/tf_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/files.h"
#include "dialects/tf/function_body.h"
#include "engine/op_registry.h"

namespace graft {

const SavedModelOrigin* SavedModelOf(const Graph& graph) {
  return dynamic_cast<const SavedModelOrigin*>(graph.origin().get());
}
namespace {

namespace fs = std::filesystem;

absl::Status Error(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": error: ", what));
}

// Copies `from`, a file or folder of the SavedModel in `inside`, to `to`
// (which does not exist): folders and regular files only, each resolving
// inside the SavedModel's folder, as reading it does (a link out of it, a
// FIFO, device or socket is an error). A link inside is copied as what it
// names, so the copy stands alone; a folder met again below itself (a link
// loop) is an error. `open_folders` holds the real paths of the folders being
// copied.
absl::Status CopyInside(const ModelFolder& inside, const fs::path& from,
                        const fs::path& to, std::vector<fs::path>& open_folders) {
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    if (absl::Status s = inside.CheckInside(from.string(), "a folder of the SavedModel"); !s.ok())
      return s;
    fs::path real = fs::canonical(from, ec);
    if (ec || std::find(open_folders.begin(), open_folders.end(), real) != open_folders.end() ||
        open_folders.size() > 64)
      return Error(from.string(), "a folder of the SavedModel holds itself (a link loop)");
    if (!fs::create_directory(to, ec))
      return Error(to.string(), absl::StrCat("cannot create it: ", ec.message()));
    open_folders.push_back(real);
    for (const auto& entry : fs::directory_iterator(from, ec)) {
      absl::Status s = CopyInside(inside, entry.path(), to / entry.path().filename(), open_folders);
      if (!s.ok()) return s;
    }
    open_folders.pop_back();
    if (ec) return Error(from.string(), absl::StrCat("cannot list it: ", ec.message()));
    return absl::OkStatus();
  }
  absl::StatusOr<int> in = inside.Open(from.string(), "a file of the SavedModel");
  if (!in.ok()) return in.status();
  std::shared_ptr<void> closer(nullptr, [fd = *in](void*) { close(fd); });
  // A new file in the new folder: never through a link.
  int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0) return Error(to.string(), absl::StrCat("cannot create it: ", std::strerror(errno)));
  std::string chunk(1 << 20, '\0');
  for (;;) {
    ssize_t n = read(*in, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(out);
      return Error(from.string(), "cannot read it to copy it");
    }
    if (n == 0) break;
    if (write(out, chunk.data(), static_cast<size_t>(n)) != n) {
      close(out);
      return Error(to.string(), "cannot write it");
    }
  }
  if (close(out) != 0) return Error(to.string(), "cannot write it");
  return absl::OkStatus();
}

}  // namespace

bool RestoresVariables(const SavedModelOrigin& origin) {
  return !origin.frozen && !origin.proto.meta_graphs(origin.meta_graph)
                                .saver_def()
                                .restore_op_name()
                                .empty();
}

bool IsSavedModelDir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) &&
         fs::is_regular_file(fs::path(path) / "saved_model.pb", ec);
}

absl::StatusOr<Graph> ParseSavedModel(const std::string& bytes,
                                      const std::string& source,
                                      const std::string& tag) {
  const std::string& pb = source;
  auto origin = std::make_shared<SavedModelOrigin>();
  if (!origin->proto.ParseFromString(bytes))
    return Error(pb, "not a valid SavedModel (saved_model.pb does not parse)");
  if (origin->proto.meta_graphs_size() == 0)
    return Error(pb, "a SavedModel with no MetaGraph");
  int chosen = -1;
  std::vector<std::string> seen;
  for (int i = 0; i < origin->proto.meta_graphs_size(); ++i) {
    const auto& tags = origin->proto.meta_graphs(i).meta_info_def().tags();
    seen.push_back(absl::StrCat("[", absl::StrJoin(tags, ", "), "]"));
    for (const std::string& t : tags) {
      if (t == tag && chosen < 0) chosen = i;
    }
  }
  if (chosen < 0 && origin->proto.meta_graphs_size() == 1 && tag == "serve")
    chosen = 0;
  if (chosen < 0)
    return Error(pb, absl::StrCat("no MetaGraph tagged `", tag,
                                  "`; its MetaGraphs' tags: ",
                                  absl::StrJoin(seen, ", ")));
  origin->meta_graph = chosen;
  tf::GraphDef graph_def = origin->proto.meta_graphs(chosen).graph_def();
  origin->proto.mutable_meta_graphs(chosen)->clear_graph_def();
  absl::StatusOr<Graph> graph = Graph::FromGraphDef(std::move(graph_def));
  if (!graph.ok())
    return Error(pb, absl::StrCat("MetaGraph ", seen[chosen], ": ",
                                  graph.status().message()));
  graph->set_origin(std::move(origin));
  return graph;
}

absl::StatusOr<Graph> LoadSavedModel(const std::string& dir,
                                     const std::string& tag) {
  std::string pb = (fs::path(dir) / "saved_model.pb").string();
  // Nothing outside the SavedModel's folder (or the folder its
  // saved_model.pb really lives in) is read on its behalf.
  const ModelFolder inside = ModelFolder::Of(dir, pb);
  absl::StatusOr<std::string> bytes = inside.Read(pb, kMaxGraphFileBytes, "a SavedModel");
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Graph> graph = ParseSavedModel(*bytes, pb, tag);
  if (!graph.ok()) return graph.status();
  auto origin = std::make_shared<SavedModelOrigin>(*SavedModelOf(*graph));
  origin->dir = dir;
  std::string prefix = (fs::path(dir) / "variables" / "variables").string();
  std::error_code ec;
  bool shards = false;
  for (const auto& f : fs::directory_iterator(fs::path(dir) / "variables", ec))
    shards = shards || f.path().filename().string().rfind("variables.data-", 0) == 0;
  if (fs::exists(prefix + ".index", ec) || shards) {
    if (!fs::exists(prefix + ".index", ec))
      return absl::NotFoundError(absl::StrCat(
          prefix, ".index: error: missing (variables/ holds data shards "
                  "without their index)"));
    absl::StatusOr<TensorBundle> bundle = TensorBundle::Open(prefix, inside);
    if (!bundle.ok()) return bundle.status();
    origin->variables = *std::move(bundle);
  }
  graph->set_origin(std::move(origin));
  return graph;
}

std::set<std::string> CheckpointFunctions(const Graph& graph) {
  const SavedModelOrigin* origin = SavedModelOf(graph);
  if (origin == nullptr) return {};
  const tf::SaverDef& saver =
      origin->proto.meta_graphs(origin->meta_graph).saver_def();
  std::set<std::string> saver_nodes;
  for (const std::string& t : {saver.save_tensor_name(), saver.restore_op_name()}) {
    std::string name = t.substr(0, t.find(':'));
    if (!name.empty()) saver_nodes.insert(name);
  }
  const CallGraph calls(graph.header().library());
  std::set<std::string> by_saver, by_others;
  graph.ForEachNode([&](const Node& n) {
    calls.AddReached(n.def(), saver_nodes.count(n.name()) ? &by_saver : &by_others);
  });
  std::set<std::string> out;
  for (const std::string& f : by_saver) {
    if (by_others.count(f) == 0) out.insert(f);
  }
  return out;
}

namespace {

absl::Status WriteSavedModel(const Graph& graph, const SavedModelOrigin* origin,
                             const std::string& dir) {
  std::error_code ec;
  fs::path target = fs::absolute(dir, ec);
  if (fs::exists(target, ec) && !IsSavedModelDir(target.string()))
    return Error(dir, "exists and is not a SavedModel folder; refusing to "
                      "replace it");
  if (!origin->dir.empty() && fs::equivalent(target, origin->dir, ec))
    return Error(dir, "is the input SavedModel; write elsewhere");
  fs::path parent = target.parent_path();
  if (!fs::is_directory(parent, ec))
    return Error(dir, absl::StrCat("no folder ", parent.string()));
  fs::path temp = parent / absl::StrCat(".", target.filename().string(),
                                        ".graft-", getpid());
  fs::remove_all(temp, ec);
  auto fail = [&](const std::string& what) {
    std::error_code ignore;
    fs::remove_all(temp, ignore);
    return Error(dir, what);
  };
  if (!fs::create_directories(temp, ec))
    return fail(absl::StrCat("cannot create ", temp.string(), ": ", ec.message()));
  // Everything but saved_model.pb and fingerprint.pb, as it was.
  for (const auto& entry :
       origin->dir.empty() ? fs::directory_iterator()
                           : fs::directory_iterator(origin->dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name == "saved_model.pb" || name == "fingerprint.pb") continue;
    if (origin->frozen && name != "assets" && name != "assets.extra") continue;
    std::vector<fs::path> open_folders;
    absl::Status copied =
        CopyInside(ModelFolder::Of(origin->dir, (fs::path(origin->dir) / "saved_model.pb").string()),
                   entry.path(), temp / name, open_folders);
    if (!copied.ok()) {
      std::error_code ignore;
      fs::remove_all(temp, ignore);
      return copied;
    }
  }
  if (ec) return fail(absl::StrCat("cannot read ", origin->dir, ": ", ec.message()));
  tf::SavedModel out = origin->proto;
  *out.mutable_meta_graphs(origin->meta_graph)->mutable_graph_def() =
      graph.ToGraphDef();
  std::string bytes;
  if (!out.SerializeToString(&bytes))
    return fail("the SavedModel does not serialize (over 2 GiB?)");
  {
    std::ofstream file(temp / "saved_model.pb", std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) return fail("cannot write saved_model.pb");
  }
  // Into place: an existing SavedModel is moved aside first and removed
  // once the new one is there.
  fs::path old = parent / absl::StrCat(".", target.filename().string(),
                                       ".graft-old-", getpid());
  bool replaced = fs::exists(target, ec);
  if (replaced) {
    fs::rename(target, old, ec);
    if (ec) return fail(absl::StrCat("cannot move the old ", dir, " aside: ",
                                     ec.message()));
  }
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignore;
    if (replaced) fs::rename(old, target, ignore);
    return fail(absl::StrCat("cannot rename into place: ", ec.message()));
  }
  if (replaced) fs::remove_all(old, ec);
  return absl::OkStatus();
}

}  // namespace

absl::Status SaveSavedModel(const Graph& graph, const std::string& dir) {
  const SavedModelOrigin* origin = SavedModelOf(graph);
  if (origin == nullptr) return Error(dir, "the graph is not a SavedModel's");
  return WriteSavedModel(graph, origin, dir);
}

absl::Status SaveFrozenSavedModel(const Graph& graph, const std::string& dir,
                                  const SignatureTensors& signature) {
  for (const char* op : {"VarHandleOp", "VariableV2", "Variable"}) {
    if (!graph.NodesWithOp(op).empty())
      return Error(dir, absl::StrCat("the graph has variables (", op,
                                     "); only a frozen graph is written "
                                     "this way"));
  }
  SavedModelOrigin origin;
  origin.frozen = true;
  tf::MetaGraphDef* meta = origin.proto.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  tf::SignatureDef& def = (*meta->mutable_signature_def())[signature.key];
  def.set_method_name("tensorflow/serving/predict");
  for (bool input : {true, false}) {
    for (const auto& [key, tensor] : input ? signature.inputs : signature.outputs) {
      absl::string_view name;
      int port = 0;
      const Node* node = Graph::ParseTensorName(tensor, &name, &port) && port >= 0
                             ? graph.FindNode(name)
                             : nullptr;
      if (node == nullptr)
        return Error(dir, absl::StrCat("the signature's ", input ? "input" : "output",
                                       " `", key, "` names `", tensor,
                                       "`, which the graph does not have"));
      tf::TensorInfo& info = (*(input ? def.mutable_inputs()
                                      : def.mutable_outputs()))[key];
      info.set_name(absl::StrCat(node->name(), ":", port));
      info.set_dtype(TensorflowOps().OutputType(*node, port));
      const tf::AttrValue* shape = node->attr("shape");
      const tf::AttrValue* shapes = node->attr("_output_shapes");
      if (node->op() == "Placeholder" && shape != nullptr && port == 0) {
        *info.mutable_tensor_shape() = shape->shape();
      } else if (shapes != nullptr && port < shapes->list().shape_size()) {
        *info.mutable_tensor_shape() = shapes->list().shape(port);
      } else {
        info.mutable_tensor_shape()->set_unknown_rank(true);
      }
    }
  }
  return WriteSavedModel(graph, &origin, dir);
}

}  // namespace graft

#include "batch/batch.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dialects/tf/saved_model.h"

namespace graft::batch {
namespace {

namespace fs = std::filesystem;

absl::Status PlaceOutput(const BatchInput& in);

bool IsGraphFile(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".pb" || ext == ".pbtxt" || ext == ".onnx";
}

// Modification time in nanoseconds, or -1.
int64_t MTime(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
         st.st_mtim.tv_nsec;
}

bool UpToDate(const BatchInput& in, const BatchOptions& options) {
  int64_t out = MTime(in.output);
  if (out < 0 || out <= MTime(in.input)) return false;
  for (const std::string& rules : options.rule_files) {
    if (out <= MTime(rules)) return false;
  }
  return true;
}

void Recount(report::BatchReport* r) {
  r->set_ok(0);
  r->set_unchanged(0);
  r->set_skipped(0);
  r->set_failed(0);
  r->set_rewrites(0);
  r->clear_rewrites_per_rule();
  std::map<std::string, int64_t> per_rule;
  for (const report::BatchModel& m : r->models()) {
    const std::string& s = m.status();
    if (s == "ok") r->set_ok(r->ok() + 1);
    if (s == "unchanged") r->set_unchanged(r->unchanged() + 1);
    if (s == "skipped") r->set_skipped(r->skipped() + 1);
    if (s == "failed") r->set_failed(r->failed() + 1);
    r->set_rewrites(r->rewrites() + m.report().rewrites());
    for (const report::RuleStats& rule : m.report().rules())
      per_rule[rule.name()] += rule.applied();
  }
  for (const auto& [name, count] : per_rule) {
    if (count == 0) continue;
    report::Count* c = r->add_rewrites_per_rule();
    c->set_name(name);
    c->set_count(count);
  }
}

}  // namespace

report::BatchModel ApplyOne(const BatchInput& in,
                            const std::vector<dsl::CompiledStep>& steps,
                            const BatchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  report::BatchModel m;
  m.set_input(in.input);
  m.set_output(in.output);
  auto fail = [&](const absl::Status& s) {
    m.set_status("failed");
    m.set_error(std::string(s.message()));
  };
  if (!in.refused.empty()) {
    fail(absl::InvalidArgumentError(in.refused));
    return m;
  }
  if (options.skip_unchanged && UpToDate(in, options)) {
    m.set_status("skipped");
    return m;
  }
  {  // the graph is freed inside the model's time
    absl::StatusOr<Graph> graph =
        IsSavedModelDir(in.input) ? ReadSavedModel(in.input, options.saved_model)
                                  : LoadGraph(in.input, options.input_format);
    if (!graph.ok()) {
      fail(graph.status());
    } else {
      report::ApplyReport* r = m.mutable_report();
      r->set_input(in.input);
      r->set_output(in.output);
      absl::Status ran = dsl::RunPipeline(*graph, steps, options.run, r);
      if (ran.ok()) ran = PlaceOutput(in);
      absl::Status saved =
          ran.ok() ? SaveGraph(*graph, in.output, options.output_format) : ran;
      if (!saved.ok()) {
        fail(saved);
      } else {
        m.set_status(r->rewrites() > 0 ? "ok" : "unchanged");
      }
    }
  }
  m.set_ms(std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count());
  return m;
}

namespace {

// A folder TensorFlow's SavedModel loader reads (saved_model.pb or
// saved_model.pbtxt at its top).
bool IsSavedModel(const fs::path& folder) {
  std::error_code ec;
  return fs::is_regular_file(folder / "saved_model.pb", ec) ||
         fs::is_regular_file(folder / "saved_model.pbtxt", ec);
}


// The same file or folder, however it is spelled (`out`, `./out/`).
std::string Canonical(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return (ec ? p.lexically_normal() : c).string();
}

bool Within(const std::string& path, const std::string& folder) {
  return path == folder ||
         (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
          (folder.back() == '/' || path[folder.size()] == '/'));
}

// A batch's output name is derived from its input's: its folders are made
// only inside the output folder, links resolved (a link there is never
// followed out of it), and a link at the name itself is removed, so that
// the output replaces it instead of writing through it.
absl::Status PlaceOutput(const BatchInput& in) {
  std::error_code ec;
  if (in.out_dir.empty()) {  // one model named by its caller
    fs::create_directories(fs::path(in.output).parent_path(), ec);
    return absl::OkStatus();
  }
  fs::create_directories(in.out_dir, ec);  // the folder the user named
  const std::string root = Canonical(in.out_dir);
  fs::path existing = fs::path(in.output).parent_path();
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  const fs::path real = fs::canonical(existing.empty() ? fs::path(".") : existing, ec);
  if (ec || !Within(real.string(), root))
    return absl::InvalidArgumentError(absl::StrCat(
        in.output, ": error: its folder resolves to ", real.string(),
        ", outside the output folder ", in.out_dir,
        ": a link in the output folder is never followed"));
  fs::create_directories(fs::path(in.output).parent_path(), ec);
  if (fs::is_symlink(fs::symlink_status(in.output, ec))) fs::remove(in.output, ec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<BatchInput>> ExpandInputs(
    const std::vector<std::string>& inputs, const std::string& out_dir) {
  std::map<std::string, std::string> found;  // input -> output
  std::map<std::string, std::string> refused;  // input -> why
  // A model found in a folder that is a link out of it is listed, refused.
  auto check_link = [&](const fs::directory_entry& e, const fs::path& root) {
    std::error_code link_ec;
    if (!e.is_symlink(link_ec)) return;
    fs::path real = fs::canonical(e.path(), link_ec);
    if (link_ec || !Within(real.string(), Canonical(root)))
      refused[e.path().string()] = absl::StrCat(
          e.path().string(), ": error: a link to ", link_ec ? "nothing" : real.string(),
          ", outside the folder ", root.string(), " it was found in: never read");
  };
  // The output folder is never read as input (a rerun would rewrite its
  // own results), whatever the path says.
  std::string out_canonical = out_dir.empty() ? "" : Canonical(out_dir);
  for (const std::string& input : inputs) {
    std::error_code ec;
    fs::file_status st = fs::status(input, ec);
    if (ec || !fs::exists(st)) {
      return absl::NotFoundError(
          absl::StrCat(input, ": no such file or folder"));
    }
    if (fs::is_directory(st) && IsSavedModel(input)) {  // one model
      fs::path root = fs::path(input).lexically_normal();
      if (root.filename().empty()) root = root.parent_path();
      found.emplace(input, (fs::path(out_dir) / root.filename()).string());
    } else if (fs::is_directory(st)) {
      fs::path root(input);
      size_t before = found.size();
      for (auto it = fs::recursive_directory_iterator(root, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code dir_ec;
        if (it->is_directory(dir_ec)) {
          if (!out_canonical.empty() &&
              Canonical(it->path()) == out_canonical) {
            it.disable_recursion_pending();
          } else if (IsSavedModel(it->path())) {  // one model, not its files
            it.disable_recursion_pending();
            check_link(*it, root);
            fs::path rel = fs::relative(it->path(), root);
            found.emplace(it->path().string(),
                          (fs::path(out_dir) / rel).string());
          }
          continue;
        }
        // Every graph file, readable or not (a broken link, a FIFO): what
        // cannot be read is reported with the batch.
        if (!IsGraphFile(it->path())) continue;
        if (!out_canonical.empty() &&
            Within(Canonical(it->path()), out_canonical))
          continue;
        check_link(*it, root);
        fs::path rel = fs::relative(it->path(), root);
        found.emplace(it->path().string(), (fs::path(out_dir) / rel).string());
      }
      if (ec) {
        return absl::UnavailableError(
            absl::StrCat(input, ": cannot list the folder: ", ec.message()));
      }
      if (found.size() == before) {
        return absl::InvalidArgumentError(absl::StrCat(
            input, ": no models (.pb, .pbtxt, .onnx files or SavedModels) in this "
                   "folder"));
      }
    } else {
      found.emplace(input,
                    (fs::path(out_dir) / fs::path(input).filename()).string());
    }
  }
  // Two inputs to one output would overwrite each other: refused before
  // anything is written, naming both.
  std::map<std::string, std::string> by_output;
  for (const auto& [in, o] : found) {
    if (out_dir.empty()) break;  // nothing is written (review)
    auto [it, fresh] = by_output.emplace(Canonical(o), in);
    if (!fresh) {
      return absl::InvalidArgumentError(absl::StrCat(
          "`", it->second, "` and `", in, "` would both be written to `", o,
          "`; give them separate output folders (or apply a folder that "
          "holds both, whose layout the output mirrors)"));
    }
  }
  std::vector<BatchInput> out;
  for (const auto& [in, o] : found) {
    auto why = refused.find(in);
    out.push_back({in, o, out_dir, why == refused.end() ? "" : why->second});
  }
  return out;
}

std::vector<BatchInput> Shard(const std::vector<BatchInput>& inputs, int index,
                              int count) {
  std::vector<BatchInput> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<int>(i % count) == index) out.push_back(inputs[i]);
  }
  return out;
}

absl::StatusOr<std::pair<int, int>> ParseShard(const std::string& text) {
  size_t slash = text.find('/');
  int i = 0, n = 0;
  if (slash == std::string::npos ||
      !absl::SimpleAtoi(text.substr(0, slash), &i) ||
      !absl::SimpleAtoi(text.substr(slash + 1), &n) || n <= 0 || i < 0 ||
      i >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard `", text, "`: expected i/n with 0 <= i < n (as in 0/4)"));
  }
  return std::make_pair(i, n);
}

report::BatchReport RunBatch(const std::vector<BatchInput>& inputs,
                             const std::vector<dsl::CompiledStep>& steps,
                             const BatchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::vector<report::BatchModel> results(inputs.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  int done = 0;
  auto work = [&] {
    for (size_t i = next++; i < inputs.size(); i = next++) {
      results[i] = ApplyOne(inputs[i], steps, options);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (options.progress)
        options.progress(results[i], done, static_cast<int>(inputs.size()));
    }
  };
  int jobs = std::max(1, std::min<int>(options.jobs, inputs.size()));
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
  report::BatchReport report;
  for (report::BatchModel& m : results) *report.add_models() = std::move(m);
  report.set_jobs(jobs);
  report.set_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  Recount(&report);
  return report;
}

report::BatchReport MergeReports(
    const std::vector<report::BatchReport>& parts) {
  std::map<std::string, report::BatchModel> by_input;
  report::BatchReport out;
  for (const report::BatchReport& p : parts) {
    for (const report::BatchModel& m : p.models()) by_input[m.input()] = m;
    out.set_seconds(std::max(out.seconds(), p.seconds()));
    out.set_jobs(std::max(out.jobs(), p.jobs()));
  }
  for (auto& [input, m] : by_input) *out.add_models() = std::move(m);
  Recount(&out);
  return out;
}

}  // namespace graft::batch

// graft._graft: the library API (api/graft.h) for Python. Models cross as
// bytes or paths, reports as JSON text (graft/__init__.py makes them plain
// Python objects); graft works with the GIL released.
#include <tuple>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "api/graft.h"
#include "google/protobuf/util/json_util.h"

namespace py = pybind11;

namespace graft::api {
namespace {

// A C++ error on its way to Python's graft.Error.
struct PyError {
  Error error;
};

GraphFormat FormatOf(const std::string& name) {
  absl::StatusOr<GraphFormat> f = ParseGraphFormat(name);
  if (!f.ok()) throw PyError{Error::Usage(std::string(f.status().message()))};
  return *f;
}

// (path, data or None, format): a file, or bytes named by path.
Model ModelOf(const std::string& path, const py::object& data,
              const std::string& format) {
  if (data.is_none()) return Model::File(path, FormatOf(format));
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0)
    throw py::error_already_set();
  // The Python bytes themselves, not a copy: the graph holds a reference,
  // dropped with the GIL held (graphs die where graft runs without it).
  Py_INCREF(data.ptr());
  std::shared_ptr<const void> owner(data.ptr(), [](const void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
  return Model::View(std::move(owner),
                     absl::string_view(buffer, static_cast<size_t>(size)),
                     FormatOf(format), path.empty() ? "<bytes>" : path);
}

template <typename T>
T Take(Result<T> result) {
  if (!result.ok()) throw PyError{result.error()};
  return std::move(result).value();
}

using RulesPtr = std::shared_ptr<const Rules>;

RulesPtr Compile(const std::vector<std::string>& files, const std::string& text,
                 const std::string& text_name, const std::string& pipeline,
                 const std::string& transforms,
                 const std::string& onnxoptimizer_passes,
                 const std::string& gtt_inputs,
                 const std::map<std::string, std::string>& params,
                 const std::vector<std::string>& skip_rules,
                 const std::vector<std::string>& only_rules,
                 const std::vector<std::string>& outputs,
                 const AnalysisSettings& analysis, const std::string& program) {
  RulesSpec spec;
  spec.rule_files = files;
  spec.rule_text = text;
  spec.rule_text_name = text_name;
  spec.pipeline = pipeline;
  spec.transforms = transforms;
  spec.onnxoptimizer_passes = onnxoptimizer_passes;
  spec.gtt_inputs = gtt_inputs;
  spec.params = params;
  spec.skip_rules = skip_rules;
  spec.only_rules = only_rules;
  spec.outputs = outputs;
  spec.analysis = analysis;
  spec.program = program;
  py::gil_scoped_release release;
  return Take(CompileRules(spec));
}

AnalysisSettings Settings(const std::string& device, const std::string& loss,
                          const std::string& seed,
                          const std::vector<std::string>& input_shapes,
                          int64_t batch, const std::string& default_device,
                          bool skip_invalid_nodes,
                          const std::string& cpu_kernels, int threads) {
  AnalysisSettings s;
  s.cpu_kernels = cpu_kernels;
  s.threads = threads;
  s.device = device;
  s.loss = loss;
  s.seed = seed;
  s.input_shapes = input_shapes;
  s.batch = batch;
  s.default_device = default_device;
  s.skip_invalid_nodes = skip_invalid_nodes;
  return s;
}

ApplyOptions ApplyOptionsOf(const std::vector<std::string>& outputs,
                            const std::vector<std::string>& custom_ops,
                            int64_t max_rewrites, bool diff,
                            const std::string& functions) {
  ApplyOptions options;
  options.functions = functions;
  options.outputs = outputs;
  options.custom_ops.insert(custom_ops.begin(), custom_ops.end());
  options.max_rewrites = max_rewrites;
  options.diff = diff;
  return options;
}

py::tuple ApplyOne(const std::string& path, const py::object& data,
                   const std::string& format, const RulesPtr& rules,
                   const std::vector<std::string>& outputs,
                   const std::vector<std::string>& custom_ops,
                   int64_t max_rewrites, bool diff, const std::string& out_path,
                   const std::string& out_format, const std::string& functions,
                   const std::string& saved_model) {
  Model model = ModelOf(path, data, format);
  if (saved_model == "in-place") {
    model.saved_model.mode = SavedModelMode::kInPlace;
  } else if (saved_model != "freeze") {
    throw PyError{Error::Usage(absl::StrCat(
        "error: saved_model: expected freeze or in-place, got `", saved_model, "`"))};
  }
  ApplyOptions options =
      ApplyOptionsOf(outputs, custom_ops, max_rewrites, diff, functions);
  Output out{out_path, FormatOf(out_format)};
  Applied applied;
  std::string report;
  {
    py::gil_scoped_release release;
    applied = Take(Apply(model, *rules, options, out));
    report = ToJson(applied.report);
  }
  return py::make_tuple(py::bytes(applied.bytes), report, applied.diff_text);
}

// A rule change (base and head) over models: (text, JSON, models failed).
std::tuple<std::string, std::string, int> ReviewModels(
    const std::vector<std::string>& base_files,
    const std::string& base_pipeline,
    const std::vector<std::string>& head_files,
    const std::string& head_pipeline,
    const std::map<std::string, std::string>& params,
    const std::vector<std::string>& models, const std::string& format, int jobs,
    bool full, const std::vector<std::string>& base_skip_rules,
    const std::vector<std::string>& head_skip_rules) {
  ReviewOptions options;
  options.base.rule_files = base_files;
  options.base.pipeline = base_pipeline;
  options.base.params = params;
  options.base.skip_rules = base_skip_rules;
  options.head.rule_files = head_files;
  options.head.pipeline = head_pipeline;
  options.head.params = params;
  options.head.skip_rules = head_skip_rules;
  options.models = models;
  options.format = format;
  options.jobs = jobs;
  options.full = full;
  py::gil_scoped_release release;
  Reviewed r = Take(Review(options));
  return std::make_tuple(r.text, r.json, r.failed);
}

std::string BatchModelJson(const std::string& input, const std::string& output,
                           const std::string& refused, const RulesPtr& rules,
                           const std::vector<std::string>& outputs,
                           const std::vector<std::string>& custom_ops,
                           int64_t max_rewrites, bool skip_unchanged,
                           const std::string& output_format,
                           const std::string& functions,
                           const std::string& out_dir) {
  BatchOptions options;
  options.out_dir = out_dir;  // the output stays inside it
  options.apply =
      ApplyOptionsOf(outputs, custom_ops, max_rewrites, false, functions);
  options.skip_unchanged = skip_unchanged;
  options.output_format = FormatOf(output_format);
  py::gil_scoped_release release;
  report::BatchReport one;
  *one.add_models() = ApplyBatchModel(PlannedModel{input, output, refused}, *rules, options);
  return ToJson(one, false);
}

}  // namespace
}  // namespace graft::api

PYBIND11_MODULE(_graft, m) {
  using namespace graft::api;  // NOLINT: the bindings read better.
  m.doc() = "graft's library API (import graft, not this module)";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      py::list diagnostics;
      for (const graft::dsl::Diagnostic& d : e.error.diagnostics) {
        diagnostics.append(py::make_tuple(d.path, d.loc.line, d.loc.col,
                                          d.message, d.notes));
      }
      py::object error = py::module_::import("graft._errors").attr("Error")(
          e.error.message, e.error.usage, diagnostics, e.error.notes);
      PyErr_SetObject(error.get_type().ptr(), error.ptr());
    }
  });

  py::class_<AnalysisSettings>(m, "AnalysisSettings");
  m.def("settings", &Settings);

  py::class_<Rules, std::shared_ptr<Rules>>(m, "Rules")
      .def_property_readonly("num_rules", &Rules::num_rules)
      .def_property_readonly("files", &Rules::files)
      .def_property_readonly("notes", &Rules::notes)
      .def_property_readonly("warnings", &Rules::warnings);
  m.def("compile", &Compile);

  m.def("apply", &ApplyOne);
  m.def("batch_model", &BatchModelJson);
  m.def("batch_plan", [](const std::vector<std::string>& inputs,
                         const std::string& out_dir, const std::string& shard) {
    BatchOptions options;
    options.inputs = inputs;
    options.out_dir = out_dir;
    options.shard = shard;
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    {
      py::gil_scoped_release release;
      for (const PlannedModel& m : Take(BatchPlan(options)))
        out.emplace_back(m.input, m.output, m.refused);
    }
    return out;
  });
  m.def("merge_batch_reports", [](const std::vector<std::string>& parts) {
    std::vector<graft::report::BatchReport> reports;
    for (const std::string& json : parts) {
      graft::report::BatchReport r;
      if (!google::protobuf::util::JsonStringToMessage(json, &r).ok())
        throw PyError{Error::Usage("not a batch report")};
      reports.push_back(std::move(r));
    }
    return ToJson(MergeBatchReports(reports), false);
  });

  m.def("stats", [](const std::string& path, const py::object& data,
                    const std::string& format) {
    Model model = ModelOf(path, data, format);
    py::gil_scoped_release release;
    return ToJson(Take(Stats(model)));
  });
  m.def("freeze_saved_model", [](const std::string& path, const std::string& tag,
                                 const std::vector<std::string>& signatures) {
    Model model = Model::File(path);
    model.saved_model.tag = tag;
    model.saved_model.signatures = signatures;
    model.saved_model.mode = SavedModelMode::kFreeze;
    Frozen frozen;
    {
      py::gil_scoped_release release;
      frozen = Take(Freeze(model));
    }
    py::list out;
    for (const SignatureTensors& s : frozen.signatures)
      out.append(py::make_tuple(s.key, s.inputs, s.outputs));
    return py::make_tuple(py::bytes(frozen.bytes), out, ToJson(frozen.report));
  });
  m.def("save_saved_model",
        [](const std::string& path, const py::object& data,
           const std::string& format, const std::string& dir,
           const std::string& key,
           const std::vector<std::pair<std::string, std::string>>& inputs,
           const std::vector<std::pair<std::string, std::string>>& outputs) {
          Model model = ModelOf(path, data, format);
          SignatureTensors signature{key, inputs, outputs};
          py::gil_scoped_release release;
          Take(SaveAsSavedModel(model, dir, signature));
        });
  m.def("convert", [](const std::string& path, const py::object& data,
                      const std::string& format, const std::string& out_path,
                      const std::string& out_format) {
    Model model = ModelOf(path, data, format);
    Output out{out_path, FormatOf(out_format)};
    std::string bytes;
    {
      py::gil_scoped_release release;
      bytes = Take(Convert(model, out, false)).bytes;
    }
    return py::bytes(bytes);
  });
  m.def("validate", [](const std::string& path, const py::object& data,
                       const std::string& format,
                       const std::vector<std::string>& outputs,
                       const std::vector<std::string>& custom_ops) {
    Model model = ModelOf(path, data, format);
    ValidateOptions options;
    options.outputs = outputs;
    options.custom_ops.insert(custom_ops.begin(), custom_ops.end());
    py::gil_scoped_release release;
    return ToJson(Take(Validate(model, options)));
  });
  m.def("diff", [](const std::string& path_a, const py::object& data_a,
                   const std::string& format_a, const std::string& path_b,
                   const py::object& data_b, const std::string& format_b,
                   const std::string& format, bool full, int context) {
    Model a = ModelOf(path_a, data_a, format_a);
    Model b = ModelOf(path_b, data_b, format_b);
    DiffOptions options;
    options.format = format;
    options.full = full;
    options.context = context;
    py::gil_scoped_release release;
    Diffed d = Take(Diff(a, b, options));
    return std::make_pair(d.differs, d.text);
  });
  m.def("explain", [](const std::string& path, const py::object& data,
                      const std::string& format, const RulesPtr& rules,
                      const std::string& rule, const std::string& node) {
    Model model = ModelOf(path, data, format);
    py::gil_scoped_release release;
    return ExplainedJson(Take(Explain(model, *rules, rule, node)));
  });
  m.def("mem", [](const std::string& path, const py::object& data,
                  const std::string& format, const AnalysisSettings& settings,
                  const std::vector<std::string>& outputs) {
    Model model = ModelOf(path, data, format);
    py::gil_scoped_release release;
    return MemJson(Take(Mem(model, settings, outputs)));
  });
  m.def("cost", [](const std::string& path, const py::object& data,
                   const std::string& format,
                   const AnalysisSettings& settings) {
    Model model = ModelOf(path, data, format);
    py::gil_scoped_release release;
    return CostJson(Take(Cost(model, settings)));
  });
  m.def("partition", [](const std::string& path, const py::object& data,
                        const std::string& format,
                        const std::vector<std::string>& backward_inputs,
                        const std::vector<std::string>& backward_ops,
                        const std::vector<std::string>& pinned,
                        const std::vector<std::string>& free,
                        const std::vector<std::string>& functional,
                        const std::vector<std::string>& swappable,
                        double budget_fraction, int64_t budget_bytes) {
    Model model = ModelOf(path, data, format);
    PartitionSettings settings{backward_inputs, backward_ops, pinned,
                               free,            functional,   swappable,
                               budget_fraction, budget_bytes};
    py::gil_scoped_release release;
    return PartitionJson(Take(Partition(model, settings)));
  });
  m.def("review", &ReviewModels);
  m.def("test_rules", [](const std::vector<std::string>& paths) {
    py::gil_scoped_release release;
    return RuleTestsJson(Take(TestRules(paths)));
  });
  m.def("format_rules", [](const std::vector<std::string>& paths, bool write) {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    py::gil_scoped_release release;
    for (const Formatted& f : Take(FormatRules(paths, write)))
      out.emplace_back(f.path, f.text, f.diff);
    return out;
  });
  m.def("pipeline_from_transforms",
        [](const std::string& transforms, const std::string& inputs,
           const std::vector<std::string>& outputs,
           const std::string& yaml_dir, const std::string& program) {
          RulesSpec spec;
          spec.transforms = transforms;
          spec.gtt_inputs = inputs;
          spec.outputs = outputs;
          spec.program = program;
          py::gil_scoped_release release;
          PipelineYaml p = Take(PipelineFromTransforms(spec, yaml_dir));
          return std::make_tuple(p.yaml, p.steps, p.notes);
        });
  m.def("version", &Version);
}

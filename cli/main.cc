// graft: rewrite ML dataflow graphs by declarative rules.
#include <malloc.h>

#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"

namespace {

using namespace graft::cli;  // NOLINT: the command table reads better.

// The formats every command reads and writes, as its help says them.
constexpr char kFormatHelp[] =
    "pb, pbtxt, onnx or auto (by extension: .pb, .pbtxt/.txt/.prototxt, "
    ".onnx/.onnxtxt; a PyTorch ATen graph, .aten.pb/.aten.pbtxt, in its "
    "GraphDef form)";
constexpr char kModelHelp[] =
    "Model: a GraphDef (.pb, .pbtxt), an ONNX model (.onnx, .onnxtxt), a "
    "PyTorch ATen graph (.aten.pb, .aten.pbtxt: graft.aten) or a SavedModel "
    "folder";

// CLI11 check for --format values.
std::string CheckFormat(const std::string& value) {
  return graft::ParseGraphFormat(value).ok()
             ? std::string()
             : "expected pb, pbtxt, onnx or auto, got `" + value + "`";
}

graft::GraphFormat Format(const std::string& value) {
  return *graft::ParseGraphFormat(value);
}

// --input-shape name=dims (repeatable) and --batch N, for the analyses.
void AddShapeOptions(CLI::App* cmd, std::vector<std::string>* input_shapes,
                     int64_t* batch) {
  cmd->add_option("--input-shape", *input_shapes,
                  "An input's shape, name=1,224,224,3 (? for unknown, a "
                  "name for a size inputs share: ids=batch,sequence; "
                  "repeatable); replaces the graph's")
      ->allow_extra_args(false);
  cmd->add_option("--batch", *batch,
                  "The size of every input's unknown first (batch) dimension")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
}

// How a SavedModel folder is read: --tag, --signature, --saved-model.
// `freezes`: whether the command freezes by default.
void AddSavedModelOptions(CLI::App* cmd, graft::api::SavedModelRead* read,
                          bool freezes) {
  cmd->add_option("--tag", read->tag,
                  "SavedModel: the MetaGraph's tag (default: serve)");
  cmd->add_option("--signature", read->signatures,
                  "SavedModel, frozen: a signature to keep (repeatable; "
                  "default: all)")
      ->allow_extra_args(false);
  cmd->add_option(
         "--saved-model", read->mode,
         freezes ? "SavedModel: freeze (default: the signatures inlined, "
                   "variables as constants) or in-place (functions and "
                   "variables as they are)"
                 : "SavedModel: in-place (default: functions and variables "
                   "as they are) or freeze (the signatures inlined, "
                   "variables as constants)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, graft::api::SavedModelMode>{
              {"freeze", graft::api::SavedModelMode::kFreeze},
              {"in-place", graft::api::SavedModelMode::kInPlace}}));
}

// Ops outside TensorFlow's registry that a graph may use.
void AddCustomOps(CLI::App* cmd, std::vector<std::string>* names,
                  std::string* file) {
  cmd->add_option("--custom-op", *names,
                  "An op TensorFlow does not have that the graph may use "
                  "(a custom op; repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--custom-ops", *file,
                  "A file of such op names, one a line (# comments)");
}

// What the analyses do with nodes that do not match their op.
void AddSkipInvalidNodes(CLI::App* cmd, bool* skip) {
  cmd->add_flag("--skip-invalid-nodes", *skip,
                "Analyse a graph with nodes that do not match their op "
                "(graft validate names them): their outputs stay unknown, "
                "and they are listed");
}

}  // namespace

int main(int argc, char** argv) {
  // graft allocates and frees large buffers (graph bytes, constant tensors);
  // keeping them in the heap for reuse, rather than mapping fresh pages from
  // the kernel each time, saves most of a large rewrite's system time.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{
      "graft rewrites machine-learning graphs (TensorFlow GraphDefs and "
      "SavedModels, ONNX models, PyTorch ATen graphs) by declarative rules.",
      "graft"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");

  CLI::App* version = app.add_subcommand("version", "Print graft's version");
  app.set_version_flag("--version", VersionString(), "Print graft's version");

  StatsOptions stats;
  std::string stats_format = "auto";
  CLI::App* stats_cmd = app.add_subcommand(
      "stats", "Node and edge counts, op histogram, devices, dtypes and size");
  stats_cmd->add_option("model", stats.model, kModelHelp)
      ->required();
  stats_cmd
      ->add_option("--format", stats_format, kFormatHelp)
      ->check(CheckFormat);
  AddSavedModelOptions(stats_cmd, &stats.saved_model, false);
  stats_cmd->add_flag("--json", stats.json, "Print the numbers as JSON");
  stats_cmd->add_flag(
      "--allow-empty", stats.allow_empty,
      "Read an empty (0-byte) graph file as a graph of no nodes");

  ConvertOptions convert;
  std::string in_format = "auto", out_format = "auto";
  CLI::App* convert_cmd =
      app.add_subcommand("convert", "Convert a graph between binary and text (.pb and .pbtxt, .onnx and .onnxtxt)");
  convert_cmd->add_option("input", convert.input, "Graph file to read")
      ->required();
  convert_cmd->add_option("output", convert.output, "Graph file to write")
      ->required();
  convert_cmd->add_option("--input-format", in_format, kFormatHelp)
      ->check(CheckFormat);
  convert_cmd->add_option("--output-format", out_format, kFormatHelp)
      ->check(CheckFormat);
  AddSavedModelOptions(convert_cmd, &convert.saved_model, false);
  convert_cmd->add_flag("--in-place", convert.in_place,
                        "Allow OUTPUT to be the INPUT file");
  convert_cmd->add_flag(
      "--allow-empty", convert.allow_empty,
      "Read an empty (0-byte) graph file as a graph of no nodes");

  ValidateCommandOptions validate;
  std::string validate_format = "auto";
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "Check a graph: inputs resolve, no cycles, unique names, dtypes agree");
  validate_cmd->add_option("model", validate.model, kModelHelp)->required();
  validate_cmd->add_option("--format", validate_format, kFormatHelp)
      ->check(CheckFormat);
  validate_cmd
      ->add_option("--outputs", validate.outputs,
                   "Nodes that must be present (comma separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  AddSavedModelOptions(validate_cmd, &validate.saved_model, false);
  validate_cmd->add_flag("--json", validate.json, "Print the result as JSON");
  AddCustomOps(validate_cmd, &validate.custom_ops, &validate.custom_ops_file);
  validate_cmd->add_flag(
      "--allow-empty", validate.allow_empty,
      "Read an empty (0-byte) graph file as a graph of no nodes");

  ApplyCommandOptions apply;
  std::string apply_in_format = "auto", apply_out_format = "auto";
  CLI::App* apply_cmd = app.add_subcommand(
      "apply",
      "Apply rule files (or a pipeline) to a graph until nothing more matches");
  apply_cmd
      ->add_option(
          "-r,--rules", apply.rule_files,
          "Rule files (.graft): -r a.graft -r b.graft, or -r a.graft,b.graft")
      ->delimiter(',')
      ->allow_extra_args(false);
  apply_cmd->add_option("--pipeline", apply.pipeline,
                        "A pipeline (YAML) of rule files");
  apply_cmd->add_option(
      "--transforms", apply.transforms,
      "The Graph Transform Tool's transforms, as its --transforms takes them "
      "(rules/tf/gtt)");
  apply_cmd->add_option(
      "--onnxoptimizer-passes", apply.onnxoptimizer_passes,
      "onnxoptimizer's passes by name, comma separated, each a rule file "
      "(rules/onnx/onnxoptimizer): 'fuse_bn_into_conv,eliminate_identity'");
  apply_cmd->add_option("--inputs", apply.gtt_inputs,
                        "With --transforms: GTT's --inputs (comma separated)");
  apply_cmd
      ->add_option("--param", apply.params, "A param: name=value (repeatable)")
      ->allow_extra_args(false);
  apply_cmd
      ->add_option("--skip-rules", apply.skip_rules,
                   "Leave these rules out of every step: names or globs, "
                   "comma separated ('rotary_*,fast_gelu')")
      ->delimiter(',')
      ->allow_extra_args(false);
  apply_cmd
      ->add_option("--only-rules", apply.only_rules,
                   "Run these rules alone, the others left out of every "
                   "step: names or globs, comma separated "
                   "('multi_head_attention_*')")
      ->delimiter(',')
      ->allow_extra_args(false);
  apply_cmd
      ->add_option("inputs", apply.inputs,
                   "Graph(s) to rewrite: files, or folders searched for .pb, "
                   ".pbtxt, .onnx and SavedModels (several, or a folder: a "
                   "batch under -o DIR)")
      ->required();
  apply_cmd
      ->add_option("-o,--output", apply.output, "Where to write the result")
      ->required();
  apply_cmd->add_option("--report", apply.report,
                        "Write a JSON report of the run here");
  apply_cmd
      ->add_option("--outputs", apply.outputs,
                   "Graph outputs that must survive (comma separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  apply_cmd->add_option(
      "--functions", apply.functions,
      "Library functions whose bodies the rules rewrite too (If/While "
      "branches and bodies, call targets; an ONNX model's If/Loop/Scan "
      "bodies, named node/attr): all (default), none, or names separated "
      "by commas");
  apply_cmd
      ->add_option("--max-rewrites", apply.max_rewrites,
                   "Stop and report non-convergence after this many rewrites "
                   "(default: 1000 + 10 per node of the graph)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  apply_cmd
      ->add_option(
          "--opset", apply.opset,
          "ONNX: raise the model's opset to this first, where every op "
          "it uses means the same there (else an error, nothing "
          "written)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  apply_cmd
      ->add_option("--max-const-elements", apply.max_const_elements,
                   "Largest constant (elements) a rule may compute on "
                   "(default: 67108864)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  apply_cmd->add_option("--input-format", apply_in_format, kFormatHelp)
      ->check(CheckFormat);
  apply_cmd
      ->add_option("--output-format", apply_out_format, kFormatHelp)
      ->check(CheckFormat);
  apply_cmd->add_flag("--in-place", apply.in_place,
                      "Allow OUTPUT to be the INPUT file");
  apply_cmd->add_flag("-q,--quiet", apply.quiet, "Print no summary");
  apply_cmd
      ->add_option("-j,--jobs", apply.jobs,
                   "Batch: models rewritten at once (default: the cores)")
      ->check(CLI::Range(1, 1024));
  apply_cmd->add_flag("--skip-unchanged", apply.skip_unchanged,
                      "Batch: leave a model whose output is newer than it and "
                      "than the rules (resume)");
  apply_cmd->add_option("--shard", apply.shard,
                        "Batch: only share i of n (0-based, as 0/4): every "
                        "n-th model from i, for an indexed job or an array");
  apply_cmd->add_flag(
      "--allow-empty", apply.allow_empty,
      "Read an empty (0-byte) graph file as a graph of no nodes");
  apply_cmd->add_flag("--diff", apply.diff,
                      "Print the structural diff of what the rules did");
  apply_cmd
      ->add_option(
          "--device", apply.device,
          "Device profile for the cost hooks (a shipped name or a YAML file)")
      ->capture_default_str();
  apply_cmd->add_option("--loss", apply.loss,
                        "The loss node, for the analysis hooks (found from "
                        "the gradient seed if not given)");
  apply_cmd->add_option("--seed", apply.seed,
                        "The gradient seed node (found if not given)");
  AddSavedModelOptions(apply_cmd, &apply.saved_model, true);
  AddShapeOptions(apply_cmd, &apply.input_shapes, &apply.batch);
  AddCustomOps(apply_cmd, &apply.custom_ops, &apply.custom_ops_file);
  apply_cmd->add_option("--device-default", apply.default_device,
                        "The device of ops the graph does not place, for the "
                        "memory analyses (as /device:GPU:0)");
  apply_cmd
      ->add_option("--cpu-kernels", apply.cpu_kernels,
                   "TensorFlow's CPU kernels, whose scratch the memory "
                   "analyses and planners count: onednn "
                   "(TF_ENABLE_ONEDNN_OPTS=1) or eigen (=0: the convolution "
                   "gradients' im2col buffers)")
      ->check(CLI::IsMember({"onednn", "eigen"}))
      ->capture_default_str();

  ExplainOptions explain;
  CLI::App* explain_cmd =
      app.add_subcommand("explain",
                         "Show what rules match in a graph (and why not at a "
                         "node), without rewriting");
  explain_cmd->add_option("--pipeline", explain.pipeline,
                          "A pipeline (YAML, or a shipped one's name): each step is explained "
                          "on the graph the steps before it made");
  explain_cmd
      ->add_option("-r,--rules", explain.rule_files, "Rule files (.graft) or folders of them")
      ->delimiter(',')
      ->allow_extra_args(false);
  explain_cmd
      ->add_option("--param", explain.params,
                   "A param: name=value (repeatable)")
      ->allow_extra_args(false);
  explain_cmd->add_option("model", explain.model, kModelHelp)->required();
  AddSavedModelOptions(explain_cmd, &explain.saved_model, true);
  explain_cmd->add_option("--rule", explain.rule, "Only this rule");
  explain_cmd->add_option("--node", explain.node,
                          "Only at this node; says why a rule fails");
  AddShapeOptions(explain_cmd, &explain.input_shapes, &explain.batch);

  MemOptions mem;
  CLI::App* mem_cmd =
      app.add_subcommand("mem",
                         "Shapes, forward/backward regions, executor schedule "
                         "and peak memory per device");
  mem_cmd->add_option("model", mem.model, kModelHelp)->required();
  mem_cmd->add_option(
      "--loss", mem.loss,
      "The loss node (found from the gradient seed if not given)");
  mem_cmd->add_option("--seed", mem.seed,
                      "The gradient seed node (found if not given)");
  mem_cmd
      ->add_option("--outputs", mem.outputs,
                   "Fetched nodes, live to the end (comma separated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  mem_cmd->add_option("--top", mem.top, "Tensors listed at each peak")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  mem_cmd->add_flag("--json", mem.json, "Print the numbers as JSON");
  AddSavedModelOptions(mem_cmd, &mem.saved_model, true);
  AddShapeOptions(mem_cmd, &mem.input_shapes, &mem.batch);
  AddSkipInvalidNodes(mem_cmd, &mem.skip_invalid_nodes);
  mem_cmd->add_option("--device-default", mem.default_device,
                      "The device of ops the graph does not place (as "
                      "/device:GPU:0); a tensor read on another device is "
                      "a copy there");
  mem_cmd
      ->add_option("--cpu-kernels", mem.cpu_kernels,
                   "TensorFlow's CPU kernels, whose scratch counts: onednn "
                   "(TF_ENABLE_ONEDNN_OPTS=1) or eigen (=0: the convolution "
                   "gradients' im2col buffers)")
      ->check(CLI::IsMember({"onednn", "eigen"}))
      ->capture_default_str();
  mem_cmd
      ->add_option("--threads", mem.threads,
                   "The kernels' intra-op threads (0: this machine's)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();

  CostOptions cost;
  CLI::App* cost_cmd = app.add_subcommand(
      "cost", "Per-op and total roofline estimates for a device");
  cost_cmd->add_option("model", cost.model, kModelHelp)->required();
  cost_cmd
      ->add_option("--device", cost.device,
                   "A shipped profile (a100, cpu, h100_pcie, h100_sxm, h200) "
                   "or a profile YAML")
      ->capture_default_str();
  cost_cmd->add_option("--top", cost.top, "Ops listed, most expensive first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cost_cmd->add_flag("--json", cost.json, "Print the numbers as JSON");
  AddSavedModelOptions(cost_cmd, &cost.saved_model, true);
  AddShapeOptions(cost_cmd, &cost.input_shapes, &cost.batch);
  AddSkipInvalidNodes(cost_cmd, &cost.skip_invalid_nodes);
  cost_cmd->add_option("--device-default", cost.default_device,
                       "The device of ops the graph does not place: copies "
                       "between devices go over the host link, overlapped");

  FmtOptions fmt;
  CLI::App* fmt_cmd =
      app.add_subcommand("fmt", "Format rule files in the canonical style");
  fmt_cmd->add_option("paths", fmt.paths, "Rule files or folders")->required();
  fmt_cmd->add_flag(
      "--check", fmt.check,
      "Change nothing; print the diff and exit 1 if a file is not formatted");

  PipelineCommandOptions pipeline;
  CLI::App* pipeline_cmd = app.add_subcommand(
      "pipeline",
      "Write a Graph Transform Tool --transforms string as a pipeline file");
  pipeline_cmd
      ->add_option("--from-transforms", pipeline.transforms,
                   "The --transforms string")
      ->required();
  pipeline_cmd->add_option("--inputs", pipeline.inputs,
                           "GTT's --inputs (comma separated)");
  pipeline_cmd->add_option("--outputs", pipeline.outputs,
                           "GTT's --outputs (comma separated)");
  pipeline_cmd->add_option("-o,--output", pipeline.output, "The YAML file")
      ->required();

  DiffOptions diff;
  CLI::App* diff_cmd = app.add_subcommand(
      "diff", "Structural diff of two graphs, nodes matched by name");
  diff_cmd->add_option("before", diff.before, "First graph")->required();
  diff_cmd->add_option("after", diff.after, "Second graph")->required();
  diff_cmd
      ->add_option(
          "--format", diff.format,
          "text (default), dot (Graphviz) or html (a page with the picture)")
      ->check(CLI::IsMember({"text", "dot", "html"}));
  AddSavedModelOptions(diff_cmd, &diff.saved_model, false);
  diff_cmd->add_flag("--exit-code", diff.exit_code,
                     "Exit 1 when the graphs differ");
  diff_cmd->add_flag("--full", diff.full,
                     "Text: added nodes in full (inputs, device, attrs) and "
                     "tensors with their values, nothing shortened; html: "
                     "draw every node, not only the changed region");
  diff_cmd
      ->add_option("--context", diff.context,
                   "html: hops of unchanged nodes drawn around the changes")
      ->check(CLI::Range(0, 1000));

  CheckOptions check;
  CLI::App* check_cmd =
      app.add_subcommand("check", "Parse and check rule files");
  check_cmd->add_option("rules", check.rule_files, "Rule files (.graft)")
      ->required();
  check_cmd
      ->add_option("--param", check.params, "A param: name=value (repeatable)")
      ->allow_extra_args(false);

  ReportMergeOptions merge;
  CLI::App* report_cmd =
      app.add_subcommand("report", "Work with the reports graft writes");
  report_cmd->require_subcommand(1);
  CLI::App* merge_cmd = report_cmd->add_subcommand(
      "merge", "Merge the batch reports of shards into one");
  merge_cmd->add_option("reports", merge.reports, "Batch reports (JSON)")
      ->required();
  merge_cmd->add_option("-o,--output", merge.output, "The merged report")
      ->required();

  ReviewOptions review;
  CLI::App* review_cmd = app.add_subcommand(
      "review",
      "A rule change's effect: base and head rules applied to every model, "
      "the outputs compared");
  review_cmd->add_option("--base", review.base_rules, "The rules before")
      ->delimiter(',')
      ->allow_extra_args(false);
  review_cmd->add_option("--head", review.head_rules, "The rules after")
      ->delimiter(',')
      ->allow_extra_args(false);
  review_cmd->add_option("-r,--rules", review.rules,
                         "Exporter drift: the rule files (or folders) over --before and --after");
  review_cmd->add_option("--pipeline", review.pipeline,
                         "Exporter drift: the pipeline over --before and --after");
  review_cmd->add_option("--before", review.before,
                         "Exporter drift: the folder of exports before (an older torch, "
                         "transformers...)");
  review_cmd->add_option("--after", review.after,
                         "Exporter drift: the folder of the same models' exports after");
  review_cmd->add_option("--base-pipeline", review.base_pipeline,
                         "The pipeline before");
  review_cmd->add_option("--head-pipeline", review.head_pipeline,
                         "The pipeline after");
  review_cmd
      ->add_option("--base-skip-rules", review.base_skip_rules,
                   "Rules left out of the base (names or globs, comma "
                   "separated): with the same rules on both sides, what "
                   "those rules do")
      ->delimiter(',')
      ->allow_extra_args(false);
  review_cmd
      ->add_option("--head-skip-rules", review.head_skip_rules,
                   "Rules left out of the head (names or globs)")
      ->delimiter(',')
      ->allow_extra_args(false);
  review_cmd
      ->add_option("--param", review.params,
                   "A param for both sides: name=value (repeatable)")
      ->allow_extra_args(false);
  review_cmd->add_option("models", review.models,
                         "Models: files or folders (not with --before/--after)");
  review_cmd
      ->add_option("--format", review.format,
                   "text (default), markdown (a pull-request comment) or html "
                   "(one page with the drawings)")
      ->check(CLI::IsMember({"text", "markdown", "html"}));
  review_cmd->add_option("--report", review.report, "A JSON report here");
  review_cmd->add_flag("--full", review.full,
                       "Every line of each model's diff (else the first 200)");
  review_cmd
      ->add_option("--context", review.context,
                   "html: hops of unchanged nodes drawn around the changes")
      ->check(CLI::Range(0, 1000));
  review_cmd->add_option("-j,--jobs", review.jobs, "Models at once")
      ->check(CLI::Range(1, 1024));

  TestCommandOptions test;
  CLI::App* test_cmd = app.add_subcommand(
      "test", "Run the `test` blocks inside rule files (files or folders)");
  test_cmd->add_option("paths", test.paths, "Rule files or folders")
      ->required();

  // The first word names a subcommand: say so when it names none.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({}))
      known = known || sub->get_name() == word;
    if (!known) {
      std::cerr << "graft: error: unknown subcommand `" << word
                << "` (run graft --help for the list)\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage to stderr
    return kExitUsage;
  }

  if (version->parsed()) {
    std::cout << VersionString() << "\n";
    return kExitOk;
  }
  if (stats_cmd->parsed()) {
    stats.format = Format(stats_format);
    return RunStats(stats);
  }
  if (convert_cmd->parsed()) {
    convert.input_format = Format(in_format);
    convert.output_format = Format(out_format);
    return RunConvert(convert);
  }
  if (apply_cmd->parsed()) {
    apply.input_format = Format(apply_in_format);
    apply.output_format = Format(apply_out_format);
    apply.input = apply.inputs.front();
    apply.program = argv[0];
    return RunApply(apply);
  }
  if (pipeline_cmd->parsed()) {
    pipeline.program = argv[0];
    return RunPipelineFromTransforms(pipeline);
  }
  if (merge_cmd->parsed()) return RunReportMerge(merge);
  if (review_cmd->parsed()) {
    review.program = argv[0];
    return RunReview(review);
  }
  if (check_cmd->parsed()) return RunCheck(check);
  if (test_cmd->parsed()) return RunTests(test);
  if (diff_cmd->parsed()) return RunDiff(diff);
  if (fmt_cmd->parsed()) return RunFmt(fmt);
  if (mem_cmd->parsed()) return RunMem(mem);
  if (cost_cmd->parsed()) return RunCost(cost);
  if (explain_cmd->parsed()) {
    explain.program = argv[0];
    return RunExplain(explain);
  }
  if (validate_cmd->parsed()) {
    validate.format = Format(validate_format);
    return RunValidate(validate);
  }
  return kExitUsage;
}

// The Graph Transform Tool's `--transforms` strings, as they are:
//
//   strip_unused_nodes(type=float, shape="1,299,299,3")
//   remove_nodes(op=Identity, op=CheckNumerics)
//   fold_constants(ignore_errors=true) fold_batch_norms fold_old_batch_norms
//
// Each transform is a rule file, `rules/tf/gtt/NAME.graft`; its `(k=v, ...)`
// are the file's params (a key given twice is one `a|b` param, as the rule
// files read GTT's lists), and GTT's `--inputs` / `--outputs` go to the
// files that declare `inputs` / `outputs` params. The same string can be
// written out as a pipeline, so that it can be reviewed as a rule file is.
#ifndef GRAFT_DSL_TRANSFORMS_H_
#define GRAFT_DSL_TRANSFORMS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dsl/pipeline.h"

namespace graft::dsl {

struct TransformCall {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;  // as written
  int column = 0;                                           // 1-based
};

// The transforms of a string; errors name the column: `--transforms:1:17:
// error: ...`.
absl::StatusOr<std::vector<TransformCall>> ParseTransforms(
    absl::string_view text);

// onnxoptimizer's pass names, as its `passes` list and graft's
// `--onnxoptimizer-passes 'fuse_bn_into_conv,eliminate_identity'` take
// them: one rule file per pass, `rules/onnx/onnxoptimizer/NAME.graft`, no params.
absl::StatusOr<std::vector<TransformCall>> ParsePassList(absl::string_view text);

struct TransformOptions {
  std::string rules_dir;  // holding the GTT rule files (rules/tf/gtt)
  std::string inputs;     // GTT's --inputs, comma-separated
  std::string outputs;    // GTT's --outputs
  std::string flag = "--transforms";  // for errors
  std::string kind = "transform";
};

// The rule files known (the names of rules_dir's *.graft files, sorted).
std::vector<std::string> KnownTransforms(const std::string& rules_dir);

// One pipeline step per transform. An unknown transform or param is an
// InvalidArgument error listing the known ones; a GTT param graft accepts
// but does not need (as fold_constants' ignore_errors) is dropped, with a
// line in `notes`.
absl::StatusOr<std::vector<PipelineStep>> TransformSteps(
    const std::vector<TransformCall>& calls, const TransformOptions& options,
    std::vector<std::string>* notes);

// A pipeline file for `steps`, its rule files relative to `yaml_dir`.
std::string PipelineYaml(const std::vector<PipelineStep>& steps,
                         const std::string& yaml_dir,
                         const std::string& transforms);

// Where a folder of shipped rule files is: `rules/LIBRARY` (the GTT's
// transforms: "tf/gtt"; onnxoptimizer's passes: "onnx/onnxoptimizer")
// beside the working directory or above the running program (a build's
// runfiles or the source tree).
std::string FindTransformRules(const std::string& program, const std::string& library);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_TRANSFORMS_H_

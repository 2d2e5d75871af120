// Pipelines: YAML files that list rule files, in order, with their params.
//
//   # rules/pipelines/inference.yaml
//   steps:
//     - rules: ../fold_batch_norms.graft     # relative to this file
//       params: {eps: 0.001}
//     - rules: [../quantize.graft]
//     - pipeline: other.yaml                # its steps, here
#ifndef GRAFT_DSL_PIPELINE_H_
#define GRAFT_DSL_PIPELINE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ast.h"

namespace graft::dsl {

struct PipelineStep {
  std::vector<std::string> rule_files;  // resolved against the YAML's folder
  std::map<std::string, std::string> params;
  // Where each param is set ("file.yaml", line, column), for errors.
  std::map<std::string, std::pair<std::string, Loc>> param_locs;
};

struct Pipeline {
  std::string path;
  std::vector<PipelineStep> steps;
};

// Errors are located: `file.yaml:3:5: error: ...`.
absl::StatusOr<Pipeline> LoadPipeline(const std::string& path);

}  // namespace graft::dsl

#endif  // GRAFT_DSL_PIPELINE_H_

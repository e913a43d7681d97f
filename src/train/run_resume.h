// ResumePoint: the second phase of a training run: the checkpoint a resumed run continues from
// (checked to be this run's) and the metrics lines up to it. Private to src/train.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/checkpoint.h"
#include "linear_ard/train/restore_config.h"
#include "run_plan.h"

namespace linear_ard::train {

// Empty for a fresh run.
struct ResumePoint {
  std::optional<std::string> checkpoint;
  std::optional<CheckpointState> state;
  std::vector<nlohmann::json> records;
};
ResumePoint run_resume_find(const RunPlan& plan);
// The resolved config with the keys about stopping reset: what a checkpoint must match to resume.
std::string run_resume_key(const RestoreConfig& config);

}  // namespace linear_ard::train

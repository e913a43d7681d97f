// RunOutputs: the third phase of a training run: the output folder prepared (fresh runs) or
// cleared of an interrupted run's temporaries (resumed ones), resolved_config.yaml, and the metrics
// log holding a resumed run's previous lines. Private to src/train.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "linear_ard/train/metrics_log.h"
#include "run_plan.h"
#include "run_resume.h"

namespace linear_ard::train {

// Rank 0 alone writes; every rank learns whether opening the folder worked.
class RunOutputs {
 public:
  RunOutputs(const RunPlan& plan, const ResumePoint& resume);
  // One metrics.jsonl line (rank 0; a no-op elsewhere).
  void append(const nlohmann::json& record);

 private:
  std::optional<MetricsLog> metrics_;
};

}  // namespace linear_ard::train

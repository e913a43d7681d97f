// run_outputs: opening a run's output folder and its metrics log.
#include "run_outputs.h"

#include <filesystem>

#include "linear_ard/io/file_atomic.h"  // defines: file_write_atomic
#include "output_folder.h"              // defines: output_prepare, output_stale_remove

namespace linear_ard::train {

RunOutputs::RunOutputs(const RunPlan& plan, const ResumePoint& resume) {
  const auto open = [&] {
    if (!plan.main_rank) return;
    const std::filesystem::path out(plan.config.output);
    if (!resume.checkpoint) output_prepare(plan.config);
    else output_stale_remove(plan.config.output);
    io::file_write_atomic((out / "resolved_config.yaml").string(), restore_config_to_yaml(plan.config));
    metrics_.emplace((out / "metrics.jsonl").string());
    for (const auto& r : resume.records) metrics_->append(r);
  };
  if (plan.dist) plan.dist->run_agreed("preparing the output folder", open);
  else open();
}

void RunOutputs::append(const nlohmann::json& record) {
  if (metrics_) metrics_->append(record);
}

}  // namespace linear_ard::train

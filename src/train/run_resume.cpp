// run_resume: finding and checking the checkpoint a resumed run continues from, and reading back
// the metrics lines it had written up to it.
#include "run_resume.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace linear_ard::train {
namespace {

using nlohmann::json;

// metrics.jsonl records of a previous run up to `step` (a resumed run continues after them).
std::vector<json> metrics_read(const std::string& path, int64_t step) {
  std::vector<json> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) break;  // a line cut short by the interruption
    if (r.value("step", int64_t{0}) <= step) records.push_back(std::move(r));
  }
  return records;
}

}  // namespace

std::string run_resume_key(const RestoreConfig& config) {
  RestoreConfig r = config;
  r.resume = false, r.stop_after_step = 0, r.profile_steps = 0, r.overwrite = false, r.divergence_factor = RestoreConfig{}.divergence_factor;
  return restore_config_to_yaml(r);
}

ResumePoint run_resume_find(const RunPlan& plan) {
  const RestoreConfig& c = plan.config;
  ResumePoint resume;
  if (c.resume && plan.main_rank) resume.checkpoint = checkpoint_latest(c.output);
  if (plan.dist && c.resume) {
    const std::string chosen = plan.dist->broadcast_string(resume.checkpoint.value_or(""));
    if (!chosen.empty()) resume.checkpoint = chosen;
  }
  if (!resume.checkpoint) return resume;
  const std::string& checkpoint = *resume.checkpoint;
  resume.state = checkpoint_state_read(checkpoint);
  if (resume.state->config_yaml != run_resume_key(c))
    throw std::invalid_argument("config key 'resume': checkpoint " + checkpoint +
                                " was written by a run with another config (only resume, stop_after_step, profile_steps, "
                                "overwrite and divergence_factor may differ)");
  if (resume.state->world_size != plan.world)
    throw std::invalid_argument("config key 'resume': checkpoint " + checkpoint + " was written by a run of " +
                                std::to_string(resume.state->world_size) + " process(es) and this run has " +
                                std::to_string(plan.world) + " (WORLD_SIZE): the data shards and the global batch "
                                "depend on it; resume with the same number");
  resume.records = metrics_read((std::filesystem::path(c.output) / "metrics.jsonl").string(), resume.state->step);
  return resume;
}

}  // namespace linear_ard::train

// run_stage_spec: the token budget of a run's stages.
#include "run_stage_spec.h"

namespace linear_ard::train {

nlohmann::json token_budget(const std::vector<StageSpec>& stages, int64_t world) {
  nlohmann::json per_stage = nlohmann::json::array();
  int64_t budget = 0;
  for (const StageSpec& stage : stages) {
    const int64_t n = stage.tokens_per_step(world) * stage.steps;
    budget += n;
    per_stage.push_back({{"stage", stage.stage}, {"L", stage.ctx_len}, {"B", stage.batch_size},
                         {"A", stage.grad_accum}, {"U", stage.steps}, {"G", world}, {"tokens", n}});
  }
  return {{"formula", "N_tok = sum_s L_s * B_s * A_s * U_s * G"}, {"stages", per_stage}, {"tokens", budget}};
}

}  // namespace linear_ard::train

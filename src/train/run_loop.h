// The stage loop of a training run: every stage's optimizer steps, evaluations, checkpoints and the
// divergence rule. Private to src/train.
#pragma once

#include "run.h"

namespace linear_ard::train {

// Runs run.stages in order from their first step (or the resumed one), skipping those a resumed
// checkpoint has finished; false when stop_after_step ended the run (its checkpoint written). A
// diverged run (a non-finite loss, gradient norm or held-out evaluation, or a step loss above
// config.divergence_factor x its stage's first loss) throws std::runtime_error saying so, after
// removing the checkpoint that led to it: the last good one stays (CheckpointKeeper), and nothing
// else is written.
bool run_stages(Run& run);

}  // namespace linear_ard::train

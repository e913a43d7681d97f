// The last phase of a training run: what it leaves for its user. Private to src/train.
#pragma once

#include "run.h"

namespace linear_ard::train {

// model/ (the trained tensors of the validation run.selection chooses, merged into the checkpoint,
// with the student's config), adapters/ and scaled/ when asked, and training_summary.json (the
// CLI draws the curves: scripts/plot.py); prints the tokens trained, the choice and where the model
// went. Loads the chosen weights into the trainables. Rank 0 only.
void run_result_write(Run& run);

}  // namespace linear_ard::train

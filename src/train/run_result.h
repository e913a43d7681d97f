// The last phase of a training run: what it leaves for its user. Private to src/train.
#pragma once

#include "run.h"

namespace linear_ard::train {

// model/ (the trained tensors merged into the checkpoint, the student's config), adapters/ and
// scaled/ when asked, and training_summary.json (the CLI draws the curves: scripts/plot.py); prints
// the tokens trained and where the model went. Rank 0 only.
void run_result_write(const Run& run);

}  // namespace linear_ard::train

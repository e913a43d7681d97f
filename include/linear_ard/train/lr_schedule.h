// lr_schedule: the paper's learning rate, linear warmup then cosine decay to a minimum ratio.
#pragma once

#include <cstdint>

namespace linear_ard::train {

struct LrSchedule {
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.0;
};

// Learning rate of optimizer update `step` (0-based): lr * (step + 1) / warmup_steps during warmup
// (so the first update is not wasted at 0), then lr * (m + (1 - m) * (1 + cos(pi * p)) / 2) with p
// going from 0 at the first post-warmup update to 1 at the last, which runs at min_lr_ratio * lr
// (a single post-warmup update runs at lr).
double lr_schedule_at(const LrSchedule& schedule, int64_t step);

}  // namespace linear_ard::train

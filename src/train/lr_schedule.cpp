// lr_schedule: linear warmup, then cosine decay to min_lr_ratio * lr.
#include "linear_ard/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace linear_ard::train {

double lr_schedule_at(const LrSchedule& s, int64_t step) {
  if (step < s.warmup_steps) return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  const int64_t decay_steps = s.total_steps - s.warmup_steps;
  const double p = decay_steps <= 1 ? 0.0
                                    : std::min(1.0, static_cast<double>(step - s.warmup_steps) /
                                                        static_cast<double>(decay_steps - 1));
  return s.lr * (s.min_lr_ratio + (1.0 - s.min_lr_ratio) * 0.5 * (1.0 + std::cos(M_PI * p)));
}

}  // namespace linear_ard::train

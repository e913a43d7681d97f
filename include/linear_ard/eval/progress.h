// EvalProgress: progress lines on stderr for long evaluations ("[tag] 12/40 requests (31s elapsed,
// ~72s left)"), at most one every few seconds plus the last, and none when disabled (--quiet).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace linear_ard::eval {

class EvalProgress {
 public:
  // `total` units of work (requests, windows, prompts); `enabled` false prints nothing.
  EvalProgress(std::string tag, int64_t total, bool enabled, double interval_s = 5.0);
  // `n` more units are done; `detail` (optional: what a unit is) is printed after the count.
  void advance(int64_t n = 1, const std::string& detail = "");

 private:
  std::string tag_;
  int64_t total_ = 0, done_ = 0;
  bool enabled_ = false;
  double interval_s_ = 5.0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace linear_ard::eval

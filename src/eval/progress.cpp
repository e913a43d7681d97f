// Throttled progress lines on stderr.
#include "linear_ard/eval/progress.h"

#include <cstdio>
#include <iostream>
#include <utility>

namespace linear_ard::eval {

EvalProgress::EvalProgress(std::string tag, int64_t total, bool enabled, double interval_s)
    : tag_(std::move(tag)), total_(total), enabled_(enabled && total > 0), interval_s_(interval_s),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void EvalProgress::advance(int64_t n, const std::string& detail) {
  done_ += n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done_ < total_ && std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
  char times[96];
  std::snprintf(times, sizeof times, "(%.0fs elapsed, ~%.0fs left)", elapsed, left);
  std::cerr << "[" << tag_ << "] " << done_ << "/" << total_ << (detail.empty() ? "" : " " + detail) << " " << times
            << std::endl;
}

}  // namespace linear_ard::eval

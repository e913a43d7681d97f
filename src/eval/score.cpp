// Scoring rules shared by the task, passkey and RULER evaluations.
#include "linear_ard/eval/score.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace linear_ard::eval {

int64_t utf8_length(const std::string& text) {
  // Continuation bytes (10xxxxxx) do not start a code point.
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

ChoiceScore choice_score(const std::vector<double>& logprobs, const std::vector<std::string>& choices,
                         int64_t gold) {
  size_t best = 0, best_norm = 0;
  for (size_t i = 1; i < logprobs.size(); ++i) {
    if (logprobs[i] > logprobs[best]) best = i;
    const auto norm = [&](size_t k) { return logprobs[k] / static_cast<double>(utf8_length(choices[k])); };
    if (norm(i) > norm(best_norm)) best_norm = i;
  }
  return {best == static_cast<size_t>(gold) ? 1.0 : 0.0, best_norm == static_cast<size_t>(gold) ? 1.0 : 0.0};
}

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double s = 0;
  for (double v : values) s += v;
  return s / static_cast<double>(values.size());
}

double stderr_of_mean(const std::vector<double>& values) {
  const size_t n = values.size();
  if (n < 2) return 0;
  const double m = mean_of(values);
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

double string_match_all(const std::string& prediction, const std::vector<std::string>& references) {
  if (references.empty()) return 0;
  const std::string p = lower(prediction);
  double found = 0;
  for (const auto& r : references) found += p.find(lower(r)) != std::string::npos ? 1 : 0;
  return found / static_cast<double>(references.size());
}

double string_match_part(const std::string& prediction, const std::vector<std::string>& references) {
  const std::string p = lower(prediction);
  for (const auto& r : references)
    if (p.find(lower(r)) != std::string::npos) return 1;
  return 0;
}

}  // namespace linear_ard::eval

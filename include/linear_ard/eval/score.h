// Scoring rules: lm-evaluation-harness's multiple-choice acc/acc_norm and mean/stderr aggregation,
// and RULER's string_match_all / string_match_part for generated answers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linear_ard::eval {

// Number of Unicode code points of UTF-8 `text` (Python's len(str)): the harness divides a
// choice's loglikelihood by it for acc_norm.
int64_t utf8_length(const std::string& text);

struct ChoiceScore {
  double acc = 0, acc_norm = 0;
};
// acc: argmax of `logprobs` is `gold`; acc_norm: argmax of logprobs[i] / utf8_length(choices[i]).
// Ties go to the first index, as numpy's argmax does.
ChoiceScore choice_score(const std::vector<double>& logprobs, const std::vector<std::string>& choices,
                         int64_t gold);

// Mean of `values` and the standard error of the mean (sample std / sqrt(n); 0 when n < 2), as
// the harness reports acc_stderr.
double mean_of(const std::vector<double>& values);
double stderr_of_mean(const std::vector<double>& values);

// RULER: the fraction of `references` found (case-insensitively) in `prediction`.
double string_match_all(const std::string& prediction, const std::vector<std::string>& references);
// RULER: 1 when any of `references` is found (case-insensitively) in `prediction`, else 0.
double string_match_part(const std::string& prediction, const std::vector<std::string>& references);

}  // namespace linear_ard::eval

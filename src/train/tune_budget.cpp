// tune_budget: --budget's text, the tokens a config trains and the factor on its steps.
#include "tune_budget.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "linear_ard/io/hf_config.h"        // defines: hf_rope_dict_from_json
#include "linear_ard/io/hf_folder.h"        // defines: hf_folder_load
#include "linear_ard/io/model_path.h"       // defines: model_path_resolve
#include "linear_ard/model/rope_compose.h"  // defines: rope_compose
#include "linear_ard/train/tune.h"          // defines: tune_budget_parse
#include "run_stage_spec.h"                 // defines: StageSpec, token_budget

namespace linear_ard::train {
namespace {

bool digits_only(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// `c` with ctx_len 0 (the teacher's native length) and stage 2's (the student's length) resolved:
// the lengths the run trains on (run_plan's lengths_check), config.json read without the weights.
RestoreConfig lengths_resolved(RestoreConfig c) {
  if (c.ctx_len != 0 && (c.stage2.steps == 0 || c.stage2.ctx_len != 0)) return c;
  const io::HfFolder teacher = io::hf_folder_load(io::model_path_resolve(c.teacher), /*load_weights=*/false);
  if (c.ctx_len == 0) c.ctx_len = teacher.model_config.max_position_embeddings;
  if (c.stage2.steps > 0 && c.stage2.ctx_len == 0)
    c.stage2.ctx_len = model::rope_compose(teacher.model_config, io::hf_rope_dict_from_json(c.student_rope, teacher.model_config.rope))
                           .max_position_embeddings;
  return c;
}

}  // namespace

int64_t tune_budget_parse(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return std::invalid_argument("--budget '" + text + "': " + why +
                                 " (a number of tokens, plain or with a K, M or G suffix: 4260000, 4.26M, 500K)");
  };
  std::string number = text;
  size_t zeros = 0;  // the suffix's power of ten
  const char last = number.empty() ? '\0' : static_cast<char>(std::toupper(static_cast<unsigned char>(number.back())));
  const size_t suffix = last ? std::string("KMG").find(last) : std::string::npos;
  if (suffix != std::string::npos) {
    zeros = 3 * (suffix + 1);
    number.pop_back();
  }
  if (!number.empty() && number[0] == '-') throw bad("must be positive");
  const size_t dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  std::string fraction = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.empty() || !digits_only(whole) || !digits_only(fraction) || (dot != std::string::npos && fraction.empty()))
    throw bad("not a number");
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  if (fraction.size() > zeros) throw bad("not a whole number of tokens");
  // The tokens' decimal digits: the whole part, then the fraction padded to the suffix's zeros.
  std::string digits = whole + fraction + std::string(zeros - fraction.size(), '0');
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.size() > 18) throw bad("too large (below 10^18)");
  if (digits.empty()) throw bad("must be positive");
  return std::stoll(digits);
}

int64_t tune_tokens(const RestoreConfig& config) {
  const RestoreConfig c = lengths_resolved(config);
  const StageSpec stage1{1, c.ctx_len, c.batch_size, c.grad_accum, c.steps};
  const StageSpec stage2{2, c.stage2.ctx_len, c.stage2.batch_size, c.stage2.grad_accum, c.stage2.steps};
  return token_budget({stage1, stage2}, /*world=*/1).at("tokens").get<int64_t>();
}

double tune_budget_factor(const RestoreConfig& c, int64_t budget) {
  const int64_t tokens = tune_tokens(c);
  if (tokens <= 0) throw std::invalid_argument("--budget: the config trains no tokens to scale (steps and stage2.steps)");
  return static_cast<double>(budget) / static_cast<double>(tokens);
}

}  // namespace linear_ard::train

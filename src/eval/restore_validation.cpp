// restore_validation: passkey retrieval of a restoring student, for the run's validation.
#include "linear_ard/eval/restore_validation.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "linear_ard/eval/passkey.h"  // defines: passkey_evaluate, passkey_prompt_make

namespace linear_ard::eval {
namespace {

using nlohmann::json;

// The lengths a prompt of `tokenizer` fits in; one warning for the others.
std::vector<int64_t> lengths_fitting(const io::Tokenizer& tokenizer, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> fit;
  for (int64_t n : lengths) {
    try {
      passkey_prompt_make(tokenizer, n, 0.0, 0);
      fit.push_back(n);
    } catch (const std::invalid_argument& e) {
      const char* rank = std::getenv("RANK");
      if (!rank || std::string(rank) == "0")
        std::fprintf(stderr, "linear-ard: warning: config key 'val_passkey.lengths': %s; the validation leaves it out\n", e.what());
    }
  }
  return fit;
}

// The validator's state across calls: the student as an EvalModel (its tokenizer loaded once), and
// the lengths a prompt fits in.
struct PasskeyState {
  std::unique_ptr<EvalModel> model;
  std::vector<int64_t> lengths;
};

// The accuracy at each length of `lengths` (rows are per length and depth, equal sample counts).
json accuracy_by_length(const PasskeyResult& result, const std::vector<int64_t>& lengths) {
  json per_length = json::object();
  double sum = 0;
  for (int64_t n : lengths) {
    double correct = 0, count = 0;
    for (const PasskeyRow& row : result.rows)
      if (row.length == n) correct += row.accuracy * static_cast<double>(row.samples), count += static_cast<double>(row.samples);
    per_length[std::to_string(n)] = correct / count;
    sum += correct / count;
  }
  return {{"passkey", per_length}, {"passkey_mean", sum / static_cast<double>(lengths.size())}};
}

json passkey_validate(PasskeyState& state, const train::ValidationView& view) {
  if (!state.model) {
    state.model = std::make_unique<EvalModel>();
    state.model->tokenizer = io::tokenizer_load(view.tokenizer_folder);
    state.lengths = lengths_fitting(*state.model->tokenizer, view.passkey_lengths);
  }
  if (state.lengths.empty() || view.passkey.depths.empty()) return json::object();
  EvalModel& model = *state.model;
  model.path = "the student at step " + std::to_string(view.step);
  model.device = view.device;
  model.dtype = view.dtype;
  model.weights = view.weights;
  model.weights.config = view.student_config;  // its context is the student's (eval_context_warn)
  model.rope = view.rope;
  model.overrides = view.overrides;
  PasskeyOptions options;
  options.lengths = state.lengths;
  options.depths = view.passkey.depths;
  const auto depths = static_cast<int64_t>(view.passkey.depths.size());
  options.samples = (view.passkey.samples + depths - 1) / depths;
  return accuracy_by_length(passkey_evaluate(model, options), state.lengths);
}

}  // namespace

train::RunValidator restore_passkey_validator() {
  auto state = std::make_shared<PasskeyState>();
  return [state](const train::ValidationView& view) { return passkey_validate(*state, view); };
}

}  // namespace linear_ard::eval

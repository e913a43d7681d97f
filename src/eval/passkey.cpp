// Passkey prompts, scoring and the evaluation loop.
#include "linear_ard/eval/passkey.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

#include "linear_ard/dist/distributed.h"  // defines: Distributed, items_run
#include "linear_ard/eval/progress.h"     // defines: EvalProgress
#include "linear_ard/eval/score.h"        // defines: mean_of
#include "linear_ard/model/generate.h"    // defines: model_generate_greedy

namespace linear_ard::eval {

namespace {

constexpr const char* passkey_intro =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
    "I will quiz you about the important information there.";
constexpr const char* passkey_filler =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
constexpr const char* passkey_question = "What is the pass key? The pass key is";

std::string passkey_text(int64_t filler_count, double depth, const std::string& key) {
  const auto before = static_cast<int64_t>(static_cast<double>(filler_count) * depth + 0.5);
  const auto repeat = [](int64_t n) {
    std::string s;
    for (int64_t i = 0; i < n; ++i) s += (i ? " " : "") + std::string(passkey_filler);
    return s;
  };
  return std::string(passkey_intro) + "\n" + repeat(before) + "\nThe pass key is " + key +
         ". Remember it. " + key + " is the pass key.\n" + repeat(filler_count - before) + "\n" +
         passkey_question;
}

// The answer lead of `text` for `key`: where the ids of `text + " " + key` go on past `text`'s own
// ids, the longest run of them decoding to whitespace only. Empty when the answer's encoding changes
// the prompt's own last ids (a tokenizer merging across the boundary: nothing can be appended).
std::vector<int32_t> passkey_lead(const io::Tokenizer& tokenizer, const std::string& text, const std::string& key) {
  const auto prompt = tokenizer.encode(text, true);
  const auto full = tokenizer.encode(text + " " + key, true);
  auto it = std::mismatch(prompt.begin(), prompt.end(), full.begin(), full.end());
  std::vector<int32_t> lead;
  if (it.first != prompt.end()) return lead;
  for (auto id = it.second; id != full.end(); ++id) {
    lead.push_back(*id);
    if (tokenizer.decode(lead, /*skip_special_tokens=*/true).find_first_not_of(" \t\n") != std::string::npos) {
      lead.pop_back();
      break;
    }
  }
  return lead;
}

// One prompt's greedy continuation: its new ids, the tokens fed through (prompt + generated), and
// the time it took.
struct PasskeyGenerated {
  std::vector<int32_t> ids;
  int64_t tokens = 0;
  double seconds = 0;
};

PasskeyGenerated passkey_generate(const EvalModel& model, const model::GenerateOptions& gen, const PasskeyPrompt& p) {
  const auto ids = passkey_prompt_ids(*model.tokenizer, p);
  const auto prompt =
      torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).unsqueeze(0).to(model.device);
  const auto start = std::chrono::steady_clock::now();
  const auto out = model::model_generate_greedy(model.weights, model.rope, model.overrides, prompt, gen);
  PasskeyGenerated g;
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  g.tokens = out.size(1);
  const auto gen_ids = out[0].slice(0, prompt.size(1)).cpu().contiguous();
  g.ids.assign(gen_ids.data_ptr<int64_t>(), gen_ids.data_ptr<int64_t>() + gen_ids.numel());
  return g;
}

// The rows (length, depth order) of `prompts` and their continuations `generated`, scored.
PasskeyResult passkey_result(const io::Tokenizer& tokenizer, const PasskeyOptions& options,
                             const std::vector<PasskeyPrompt>& prompts, const std::vector<PasskeyGenerated>& generated) {
  PasskeyResult result;
  int64_t tokens = 0;
  double seconds = 0;
  size_t k = 0;
  for (int64_t length : options.lengths) {
    for (double depth : options.depths) {
      PasskeyRow row;
      row.length = length;
      row.depth = depth;
      std::vector<double> scores;
      for (int64_t s = 0; s < options.samples; ++s, ++k) {
        const PasskeyPrompt& p = prompts[k];
        const PasskeyGenerated& g = generated[k];
        tokens += g.tokens;
        seconds += g.seconds;
        const std::string text = tokenizer.decode(g.ids, /*skip_special_tokens=*/true);
        scores.push_back(passkey_score(text, p.passkey));
        row.outputs.push_back(text);
        row.prompts.push_back(p);
        row.output_ids.push_back(g.ids);
      }
      row.samples = options.samples;
      row.accuracy = mean_of(scores);
      result.rows.push_back(std::move(row));
    }
  }
  result.tokens_per_s = seconds > 0 ? static_cast<double>(tokens) / seconds : 0;
  result.answer_lead = options.answer_lead;
  return result;
}

}  // namespace

PasskeyPrompt passkey_prompt_make(const io::Tokenizer& tokenizer, int64_t target_tokens, double depth,
                                  uint64_t seed, bool answer_lead) {
  if (depth < 0 || depth > 1) throw std::invalid_argument("passkey depth must be in [0, 1]");
  std::mt19937_64 rng(seed);
  PasskeyPrompt p;
  p.passkey = std::to_string(std::uniform_int_distribution<int>(1, 50000)(rng));
  p.depth = depth;
  // The lead depends on the question that ends every prompt and on the key, not on the filler.
  if (answer_lead) p.answer_lead = passkey_lead(tokenizer, passkey_text(0, depth, p.passkey), p.passkey);
  const auto count = [&](int64_t n) {
    return static_cast<int64_t>(tokenizer.encode(passkey_text(n, depth, p.passkey), true).size() +
                                p.answer_lead.size());
  };
  const int64_t empty = count(0);
  if (empty > target_tokens)
    throw std::invalid_argument("passkey length " + std::to_string(target_tokens) +
                                " is shorter than the prompt without filler (" + std::to_string(empty) +
                                " tokens)");
  // Filler is periodic, so its tokens grow linearly: estimate from one step, then walk to the
  // largest count that fits.
  const int64_t per = std::max<int64_t>(1, count(1) - empty);
  int64_t n = (target_tokens - empty) / per;
  while (n > 0 && count(n) > target_tokens) --n;
  while (count(n + 1) <= target_tokens) ++n;
  p.text = passkey_text(n, depth, p.passkey);
  p.tokens = count(n);
  return p;
}

std::vector<int32_t> passkey_prompt_ids(const io::Tokenizer& tokenizer, const PasskeyPrompt& prompt) {
  std::vector<int32_t> ids = tokenizer.encode(prompt.text, true);
  ids.insert(ids.end(), prompt.answer_lead.begin(), prompt.answer_lead.end());
  return ids;
}

double passkey_score(const std::string& generated, const std::string& passkey) {
  const size_t start = generated.find_first_of("0123456789");
  if (start == std::string::npos) return 0;
  const size_t end = generated.find_first_not_of("0123456789", start);
  return generated.substr(start, end - start) == passkey ? 1 : 0;
}

PasskeyResult passkey_evaluate(const EvalModel& model, const PasskeyOptions& options) {
  model::GenerateOptions gen;
  gen.max_new_tokens = options.max_new_tokens;
  if (model.tokenizer->eos_id() >= 0) gen.eos_token_ids = {model.tokenizer->eos_id()};
  // Prompt k (length, depth, sample order) has seed options.seed + k. Under torchrun it is generated
  // on rank k % world; the ids, token counts and times are gathered and every rank builds the rows.
  std::vector<PasskeyPrompt> prompts;
  for (int64_t length : options.lengths) eval_context_warn(model, length, "passkey prompts");
  for (int64_t length : options.lengths)
    for (double depth : options.depths)
      for (int64_t s = 0; s < options.samples; ++s)
        prompts.push_back(passkey_prompt_make(*model.tokenizer, length, depth,
                                              options.seed + static_cast<uint64_t>(prompts.size()), options.answer_lead));
  const auto count = static_cast<int64_t>(prompts.size());
  const dist::Distributed* distributed = model.distributed;
  int64_t owned = 0;
  for (int64_t k = 0; k < count; ++k) owned += !distributed || distributed->item_owned(k) ? 1 : 0;
  EvalProgress progress("passkey", owned, options.progress);
  const int64_t width = 3 + options.max_new_tokens;  // id count, tokens, seconds, ids (padded)
  const std::vector<double> all = dist::items_run(distributed, count, width, [&](int64_t k) {
    const PasskeyGenerated g = passkey_generate(model, gen, prompts[static_cast<size_t>(k)]);
    progress.advance(1, "prompts");
    std::vector<double> item{static_cast<double>(g.ids.size()), static_cast<double>(g.tokens), g.seconds};
    item.insert(item.end(), g.ids.begin(), g.ids.end());
    return item;
  });
  std::vector<PasskeyGenerated> generated(prompts.size());
  for (int64_t k = 0; k < count; ++k) {
    const double* item = all.data() + k * width;
    PasskeyGenerated& g = generated[static_cast<size_t>(k)];
    g.ids.assign(item + 3, item + 3 + static_cast<int64_t>(item[0]));
    g.tokens = static_cast<int64_t>(item[1]);
    g.seconds = item[2];
  }
  return passkey_result(*model.tokenizer, options, prompts, generated);
}

}  // namespace linear_ard::eval

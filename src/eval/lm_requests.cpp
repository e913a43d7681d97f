// lm-eval's request types answered by the model engine (see lm_requests.h).
#include "linear_ard/eval/lm_requests.h"

#include <algorithm>
#include <stdexcept>

#include "linear_ard/eval/loglikelihood.h"  // defines: loglikelihood_request_encode, loglikelihood_compute
#include "linear_ard/model/generate.h"      // defines: model_generate_greedy

namespace linear_ard::eval {

namespace {

using nlohmann::json;

[[noreturn]] void request_fail(size_t index, const std::string& what) {
  throw std::invalid_argument("request " + std::to_string(index) + ": " + what);
}

std::string string_at(const json& r, size_t index, const char* key) {
  if (!r.contains(key) || !r[key].is_string()) request_fail(index, std::string("key '") + key + "' must be a string");
  return r[key].get<std::string>();
}

int32_t prefix_token(const io::Tokenizer& tokenizer) {
  const int32_t prefix = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
  if (prefix < 0) throw std::invalid_argument("the tokenizer has neither BOS nor EOS (lm-eval's prefix token)");
  return prefix;
}

// HFLM.tok_encode without an explicit add_special_tokens: the tokenizer's special tokens unless
// they are turned off or the text already starts with the prefix token's text.
std::vector<int32_t> text_encode(const io::Tokenizer& tokenizer, const std::string& text, bool add_special_tokens) {
  const std::string prefix_text = tokenizer.decode({prefix_token(tokenizer)});
  const bool special = add_special_tokens && !(!prefix_text.empty() && text.rfind(prefix_text, 0) == 0);
  return tokenizer.encode(text, special);
}

// The stop strings of a generate_until request (`until` as a string or list), EOS's text added.
std::vector<std::string> stops_of(const EvalModel& model, const json& r, size_t index) {
  std::vector<std::string> stops;
  const json until = r.value("until", json::array());
  if (until.is_string()) {
    stops.push_back(until.get<std::string>());
  } else if (until.is_array()) {
    for (const auto& s : until) {
      if (!s.is_string()) request_fail(index, "key 'until' must hold strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    request_fail(index, "key 'until' must be a string or a list of strings");
  }
  if (model.tokenizer->eos_id() >= 0) {
    const std::string eos = model.tokenizer->decode({model.tokenizer->eos_id()});
    if (std::find(stops.begin(), stops.end(), eos) == stops.end()) stops.push_back(eos);
  }
  return stops;
}

std::string generate_until(const EvalModel& model, const json& r, size_t index, const LmRequestOptions& o,
                           int64_t max_length) {
  const int64_t max_gen = r.value("max_gen_toks", o.max_gen_toks);
  if (max_gen < 1 || max_gen >= max_length)
    request_fail(index, "max_gen_toks " + std::to_string(max_gen) + " must be in [1, max_length " +
                            std::to_string(max_length) + ")");
  std::vector<int32_t> ids = text_encode(*model.tokenizer, string_at(r, index, "context"), o.add_special_tokens);
  if (static_cast<int64_t>(ids.size()) > max_length - max_gen) ids.erase(ids.begin(), ids.end() - (max_length - max_gen));
  if (ids.empty()) ids.push_back(prefix_token(*model.tokenizer));
  model::GenerateOptions gen;
  gen.max_new_tokens = max_gen;
  if (model.tokenizer->eos_id() >= 0) gen.eos_token_ids = {model.tokenizer->eos_id()};
  const auto prompt = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).unsqueeze(0);
  const auto out = model::model_generate_greedy(model.weights, model.rope, model.overrides, prompt.to(model.device), gen);
  const auto new_ids = out[0].slice(0, prompt.size(1)).cpu().contiguous();
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < new_ids.numel(); ++i) {
    const auto id = static_cast<int32_t>(new_ids.data_ptr<int64_t>()[i]);
    if (id == model.tokenizer->eos_id()) break;  // HF fills the rest with padding, which decoding skips
    tokens.push_back(id);
  }
  std::string text = model.tokenizer->decode(tokens, /*skip_special_tokens=*/true);
  for (const auto& stop : stops_of(model, r, index))
    if (!stop.empty()) text = text.substr(0, text.find(stop));
  return text;
}

}  // namespace

std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> rolling_windows(const std::vector<int32_t>& tokens,
                                                                                  int32_t prefix, int64_t max_length) {
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> windows;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return windows;
  const int64_t first = std::min(max_length, n);
  windows.push_back({{prefix}, std::vector<int32_t>(tokens.begin(), tokens.begin() + first)});
  for (int64_t predicted = first; predicted < n;) {
    const int64_t len = std::min(n - predicted, max_length);
    const int64_t end = predicted + len;
    // The context is the max_length - len + 1 tokens before the window's predictions (disjoint).
    const int64_t context_begin = std::max<int64_t>(0, end - max_length - 1);
    windows.push_back({std::vector<int32_t>(tokens.begin() + context_begin, tokens.begin() + (end - len)),
                       std::vector<int32_t>(tokens.begin() + (end - len), tokens.begin() + end)});
    predicted = end;
  }
  return windows;
}

json lm_requests_answer(const EvalModel& model, const json& requests, const LmRequestOptions& o) {
  const int64_t max_length = o.max_length > 0 ? o.max_length : model.weights.config.max_position_embeddings;
  json answers = json::array();
  std::vector<LoglikelihoodRequest> scored;           // every loglikelihood and rolling window, batched
  std::vector<std::pair<size_t, bool>> scored_owner;  // (request, greedy wanted)
  for (size_t i = 0; i < requests.size(); ++i) {
    const json& r = requests[i];
    const std::string type = r.is_object() ? r.value("type", "") : "";
    answers.push_back(json::object());
    if (type == "loglikelihood") {
      scored.push_back(loglikelihood_request_encode(*model.tokenizer, string_at(r, i, "context"),
                                                    string_at(r, i, "continuation"), o.add_special_tokens));
      scored_owner.push_back({i, true});
      answers[i] = {{"logprob", 0.0}, {"greedy", true}};
    } else if (type == "loglikelihood_rolling") {
      const auto ids = text_encode(*model.tokenizer, string_at(r, i, "text"), o.add_special_tokens);
      for (auto& [context, continuation] : rolling_windows(ids, prefix_token(*model.tokenizer), max_length)) {
        scored.push_back({std::move(context), std::move(continuation)});
        scored_owner.push_back({i, false});
      }
      answers[i] = {{"logprob", 0.0}};
    } else if (type == "generate_until") {
      answers[i] = {{"text", generate_until(model, r, i, o, max_length)}};
    } else {
      request_fail(i, "key 'type' must be loglikelihood, loglikelihood_rolling or generate_until");
    }
  }
  const auto results = loglikelihood_compute(model, scored, o.batch_size, max_length, nullptr, o.progress ? "requests" : "");
  for (size_t k = 0; k < results.size(); ++k) {
    json& a = answers[scored_owner[k].first];
    a["logprob"] = a["logprob"].get<double>() + results[k].logprob;
    if (scored_owner[k].second) a["greedy"] = results[k].greedy;
  }
  return answers;
}

}  // namespace linear_ard::eval

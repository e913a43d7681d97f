// Task prompts, requests, samples and metrics.
#include "linear_ard/eval/task_eval.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "linear_ard/eval/loglikelihood.h"  // defines: loglikelihood_request_encode, loglikelihood_compute
#include "linear_ard/eval/score.h"          // defines: choice_score, mean_of, stderr_of_mean

namespace linear_ard::eval {

namespace {

int64_t docs_evaluated(const TaskFile& task, const TaskOptions& options) {
  const auto n = static_cast<int64_t>(task.docs.size());
  return options.limit > 0 ? std::min(options.limit, n) : n;
}

std::string example_text(const TaskDoc& doc, const TaskOptions& options) {
  return doc.context + options.target_delimiter + doc.target() + options.fewshot_delimiter;
}

}  // namespace

std::vector<std::string> task_prompts(const TaskFile& task, const TaskOptions& options) {
  const int64_t count = docs_evaluated(task, options);
  std::vector<std::string> prompts;
  prompts.reserve(static_cast<size_t>(count));
  if (task.lm_eval_samples) {
    if (options.num_fewshot > 0 || options.fewshot_source)
      throw std::invalid_argument(task.path + " is an lm-eval samples log: its prompts already hold their "
                                  "few-shot examples (give no --num_fewshot / --fewshot-file)");
    for (int64_t i = 0; i < count; ++i) prompts.push_back(task.docs[static_cast<size_t>(i)].context);
    return prompts;
  }
  if (options.fewshot_source &&
      static_cast<int64_t>(options.fewshot_source->docs.size()) < options.num_fewshot)
    throw std::invalid_argument(options.fewshot_source->path + " has fewer than " +
                                std::to_string(options.num_fewshot) + " few-shot examples");
  if (!options.fewshot_source && options.num_fewshot > 0 &&
      static_cast<int64_t>(task.docs.size()) <= options.num_fewshot)
    throw std::invalid_argument(task.path + " has too few docs for " + std::to_string(options.num_fewshot) +
                                "-shot examples drawn from itself");
  std::string fixed;
  if (options.fewshot_source)
    for (int64_t k = 0; k < options.num_fewshot; ++k)
      fixed += example_text(options.fewshot_source->docs[k], options);
  std::mt19937_64 rng(options.seed);
  std::vector<size_t> pool(task.docs.size());
  for (int64_t i = 0; i < count; ++i) {
    std::string prefix = fixed;
    if (!options.fewshot_source && options.num_fewshot > 0) {
      // A partial Fisher-Yates draw over the other docs: each prompt gets its own examples.
      std::iota(pool.begin(), pool.end(), 0);
      std::swap(pool[static_cast<size_t>(i)], pool.back());
      const size_t others = pool.size() - 1;
      for (int64_t k = 0; k < options.num_fewshot; ++k) {
        std::uniform_int_distribution<size_t> pick(static_cast<size_t>(k), others - 1);
        std::swap(pool[static_cast<size_t>(k)], pool[pick(rng)]);
        prefix += example_text(task.docs[pool[static_cast<size_t>(k)]], options);
      }
    }
    prompts.push_back(prefix + task.docs[static_cast<size_t>(i)].context);
  }
  return prompts;
}

TaskResult task_evaluate(const EvalModel& model, const TaskFile& task, const TaskOptions& options) {
  const std::vector<std::string> prompts = task_prompts(task, options);
  const int64_t max_length =
      options.max_length > 0 ? options.max_length : model.weights.config.max_position_embeddings;
  eval_context_warn(model, max_length, "task requests (--max-length)");

  TaskResult out;
  out.name = task.name;
  out.path = task.path;
  out.type = task.type;
  out.from_lm_eval_samples = task.lm_eval_samples;
  out.docs = static_cast<int64_t>(prompts.size());
  out.docs_total = static_cast<int64_t>(task.docs.size());
  std::vector<LoglikelihoodRequest> encoded;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const TaskDoc& doc = task.docs[i];
    TaskSample sample;
    sample.doc = &doc;
    if (!doc.requests.empty()) {
      for (const auto& [context, continuation] : doc.requests) sample.requests.push_back({context, continuation});
    } else {
      const std::vector<std::string> answers =
          doc.choices.empty() ? std::vector<std::string>{doc.continuation} : doc.choices;
      for (const auto& a : answers) sample.requests.push_back({prompts[i], options.target_delimiter + a});
    }
    for (const auto& r : sample.requests) {
      try {
        encoded.push_back(loglikelihood_request_encode(*model.tokenizer, r.context, r.continuation,
                                                       options.add_special_tokens));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(task.path + ":" + std::to_string(doc.line) + ": " + e.what());
      }
    }
    out.samples.push_back(std::move(sample));
  }
  LoglikelihoodStats stats;
  const auto results = loglikelihood_compute(model, encoded, options.batch_size, max_length, &stats,
                                             options.progress ? "tasks " + task.name : "");
  out.tokens = stats.tokens;
  out.seconds = stats.seconds;
  out.tokens_per_s = stats.seconds > 0 ? static_cast<double>(stats.tokens) / stats.seconds : 0;

  std::vector<double> acc, acc_norm, logprobs;
  size_t r = 0;
  for (TaskSample& sample : out.samples) {
    std::vector<double> lls;
    for (TaskRequest& request : sample.requests) {
      request.logprob = results[r].logprob;
      request.greedy = results[r].greedy;
      lls.push_back(request.logprob);
      ++r;
    }
    if (task.type == TaskType::task_type_last_word) {
      sample.acc = sample.requests.front().greedy ? 1.0 : 0.0;
      logprobs.push_back(lls.front());
    } else {
      const ChoiceScore s = choice_score(lls, sample.doc->choices, sample.doc->gold);
      sample.acc = s.acc;
      sample.acc_norm = s.acc_norm;
      acc_norm.push_back(s.acc_norm);
    }
    acc.push_back(sample.acc);
  }
  out.metrics["acc"] = mean_of(acc);
  out.metrics["acc_stderr"] = stderr_of_mean(acc);
  if (task.type == TaskType::task_type_multiple_choice) {
    out.metrics["acc_norm"] = mean_of(acc_norm);
    out.metrics["acc_norm_stderr"] = stderr_of_mean(acc_norm);
  } else {
    out.metrics["perplexity"] = std::exp(-mean_of(logprobs));
  }
  return out;
}

}  // namespace linear_ard::eval

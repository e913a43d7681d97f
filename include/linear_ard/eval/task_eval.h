// Evaluating one task file: harness-style prompts (few-shot examples joined by the few-shot
// delimiter, target delimiter before every answer), loglikelihood requests, per-doc samples and
// per-task metrics, as lm-evaluation-harness computes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"
#include "linear_ard/eval/task_file.h"

namespace linear_ard::eval {

struct TaskOptions {
  int64_t num_fewshot = 0;
  // Source of few-shot examples: its first num_fewshot docs, in order (the harness's first_n
  // sampler). Null: num_fewshot docs of the task itself, other than the one asked, drawn with `seed`.
  const TaskFile* fewshot_source = nullptr;
  uint64_t seed = 1234;
  std::string target_delimiter = " ";
  std::string fewshot_delimiter = "\n\n";
  // The tokenizer's special tokens on every context, as transformers' add_special_tokens=True adds
  // them (lm-eval's HF backend default); false: none (lm-eval's add_bos_token=False).
  bool add_special_tokens = true;
  int64_t batch_size = 8;
  int64_t max_length = 0;  // 0: the model's max_position_embeddings
  int64_t limit = 0;       // 0: every doc, else the first `limit`
  bool progress = false;   // progress lines on stderr
};

// The prompt of every evaluated doc: few-shot examples (context + target_delimiter + target, each
// followed by fewshot_delimiter), then the doc's context. An lm-eval samples file's docs keep their
// own prompts (and refuse num_fewshot > 0: theirs already hold their examples).
std::vector<std::string> task_prompts(const TaskFile& task, const TaskOptions& options);

// One loglikelihood request and its score.
struct TaskRequest {
  std::string context, continuation;
  double logprob = 0;
  bool greedy = false;
};

// One evaluated doc: its requests (one per choice, or the continuation) and its metrics.
struct TaskSample {
  const TaskDoc* doc = nullptr;
  std::vector<TaskRequest> requests;
  double acc = 0;
  double acc_norm = 0;  // multiple choice only
};

struct TaskResult {
  std::string name;
  std::string path;  // the task file
  TaskType type = TaskType::task_type_multiple_choice;
  bool from_lm_eval_samples = false;  // the file was an lm-eval samples log
  int64_t docs = 0;        // evaluated (after --limit)
  int64_t docs_total = 0;  // in the file
  // lm-eval's metric names: multiple choice acc, acc_stderr, acc_norm, acc_norm_stderr; last word
  // acc, acc_stderr, perplexity (exp of minus the mean loglikelihood).
  std::map<std::string, double> metrics;
  std::vector<TaskSample> samples;
  int64_t tokens = 0;
  double seconds = 0;
  double tokens_per_s = 0;
};

// Evaluates `task` (which must outlive the result: samples point at its docs). The continuation
// of a built request is target_delimiter + choice (or + continuation).
TaskResult task_evaluate(const EvalModel& model, const TaskFile& task, const TaskOptions& options);

}  // namespace linear_ard::eval

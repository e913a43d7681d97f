// Evaluating one task file: harness-style prompts (few-shot examples joined by the few-shot
// delimiter, target delimiter before every answer), loglikelihood requests, per-task metrics.
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
  bool add_special_tokens = true;
  int64_t batch_size = 8;
  int64_t max_length = 0;  // 0: the model's max_position_embeddings
  int64_t limit = 0;       // 0: every doc, else the first `limit`
};

// The prompt of every evaluated doc: few-shot examples (context + target_delimiter + target, each
// followed by fewshot_delimiter), then the doc's context.
std::vector<std::string> task_prompts(const TaskFile& task, const TaskOptions& options);

// One request as text, for --write-requests and the tests.
struct TaskRequestText {
  int64_t line = 0;
  std::string context, continuation;
  double logprob = 0;
  bool greedy = false;
};

struct TaskResult {
  std::string name;
  TaskType type = TaskType::task_type_multiple_choice;
  int64_t docs = 0;
  // multiple choice: acc, acc_stderr, acc_norm, acc_norm_stderr; last word: acc, acc_stderr, ppl
  std::map<std::string, double> metrics;
  int64_t tokens = 0;
  double seconds = 0;
  double tokens_per_s = 0;
};

// Evaluates `task`; the requests (with their scores) go to `requests` when given. The continuation
// of a request is target_delimiter + choice (or + continuation).
TaskResult task_evaluate(const EvalModel& model, const TaskFile& task, const TaskOptions& options,
                         std::vector<TaskRequestText>* requests = nullptr);

}  // namespace linear_ard::eval

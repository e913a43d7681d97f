// Task files: lm-evaluation-harness-style tasks as JSONL, read and validated line by line so a bad
// line is an error naming file and line, never a changed score. Two layouts (docs/eval.md): this
// project's schema (context + choices/gold, or context + continuation), and the per-sample log
// lm-eval writes with --log_samples (its requests verbatim, few-shot examples included).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace linear_ard::eval {

enum class TaskType {
  task_type_multiple_choice,  // "choices" + "gold": acc, acc_norm
  task_type_last_word,        // "continuation": acc (greedy match of every token), perplexity
};
const char* task_type_name(TaskType type);
// lm-eval's output_type of the type: "multiple_choice" or "loglikelihood".
const char* task_type_lm_eval_name(TaskType type);

struct TaskDoc {
  int64_t line = 0;                  // 1-based line in the file
  int64_t doc_id = 0;                // lm-eval's doc_id (a samples file's), else the doc's index
  nlohmann::json doc;                // the doc as lm-eval logs it: the line's object, or its "doc"
  std::string context;
  std::vector<std::string> choices;  // multiple choice
  int64_t gold = -1;                 // multiple choice: index into choices
  std::string continuation;          // last word
  // From an lm-eval samples file: its (context, continuation) requests verbatim, one per choice
  // (one for a last-word task); the contexts hold the few-shot examples, the continuations the
  // target delimiter. Empty for this project's schema, whose requests task_evaluate builds.
  std::vector<std::pair<std::string, std::string>> requests;
  // The target as lm-eval logs it (str(doc_to_target)): a samples file's own, else the gold index
  // or the continuation as requested (target delimiter first: lm-eval's loglikelihood tasks send
  // doc_to_target as is, and LAMBADA's holds the space).
  std::string logged_target;
  // The text a few-shot example shows after its context: the gold choice or the continuation.
  const std::string& target() const { return choices.empty() ? continuation : choices[gold]; }
};

struct TaskFile {
  std::string path;
  std::string name;  // file name without directory and .jsonl (and lm-eval's samples_ / _<date>)
  TaskType type = TaskType::task_type_multiple_choice;
  bool lm_eval_samples = false;  // every doc carries its requests (TaskDoc::requests)
  std::vector<TaskDoc> docs;
};

// Reads `path`. Every non-blank line must be a JSON object of one layout, the same for the whole
// file, and every doc of the same type:
// - this project's: a string "context" and either "choices" (non-empty list of non-empty strings)
//   with an integer "gold" in range, or a non-empty string "continuation";
// - lm-eval's --log_samples: "doc_id", "arguments" ({"gen_args_i": {"arg_0": context, "arg_1":
//   continuation}} or [[context, continuation], ...]) and "target"; one request is a last-word
//   doc (continuation = arg_1), more a multiple-choice one whose gold is "target" (an index, its
//   digits, or the text of a choice) and whose choices are the continuations less the leading
//   `target_delimiter` (what lm-eval's acc_norm divides by).
// Throws std::invalid_argument "path:line: problem" at the first bad line, and for a file with no
// document.
TaskFile task_file_read(const std::string& path, const std::string& target_delimiter = " ");

}  // namespace linear_ard::eval

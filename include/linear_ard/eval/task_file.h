// Task files: lm-evaluation-harness-style tasks as JSONL (docs/eval.md gives the schema), read and
// validated line by line so a bad line is an error naming file and line, never a changed score.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linear_ard::eval {

enum class TaskType {
  task_type_multiple_choice,  // "choices" + "gold": acc, acc_norm
  task_type_last_word,        // "continuation": acc (greedy match of every token), perplexity
};
const char* task_type_name(TaskType type);

struct TaskDoc {
  int64_t line = 0;                  // 1-based line in the file
  std::string context;
  std::vector<std::string> choices;  // multiple choice
  int64_t gold = -1;                 // multiple choice: index into choices
  std::string continuation;          // last word
  // The text a few-shot example shows after its context: the gold choice or the continuation.
  const std::string& target() const { return choices.empty() ? continuation : choices[gold]; }
};

struct TaskFile {
  std::string path;
  std::string name;  // file name without directory and .jsonl
  TaskType type = TaskType::task_type_multiple_choice;
  std::vector<TaskDoc> docs;
};

// Reads `path`. Every non-blank line must be a JSON object with a string "context" and either
// "choices" (non-empty list of non-empty strings) with an integer "gold" in range, or a non-empty
// string "continuation" — and every line of a file the same kind. Throws std::invalid_argument
// "path:line: problem" at the first bad line, and for a file with no document.
TaskFile task_file_read(const std::string& path);

}  // namespace linear_ard::eval

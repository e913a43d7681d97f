// Reading and validating JSONL task files.
#include "linear_ard/eval/task_file.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace linear_ard::eval {

const char* task_type_name(TaskType type) {
  return type == TaskType::task_type_multiple_choice ? "multiple_choice" : "last_word";
}

namespace {

TaskDoc task_doc_parse(const std::string& line, int64_t number, const std::string& where) {
  const auto fail = [&](const std::string& problem) {
    return std::invalid_argument(where + ":" + std::to_string(number) + ": " + problem);
  };
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw fail("not valid JSON");
  if (!j.is_object()) throw fail("expected a JSON object");
  TaskDoc doc;
  doc.line = number;
  if (!j.contains("context") || !j["context"].is_string()) throw fail("missing string field \"context\"");
  doc.context = j["context"].get<std::string>();
  const bool mc = j.contains("choices"), lw = j.contains("continuation");
  if (mc == lw) throw fail("needs exactly one of \"choices\" (with \"gold\") and \"continuation\"");
  if (lw) {
    if (!j["continuation"].is_string() || j["continuation"].get<std::string>().empty())
      throw fail("\"continuation\" must be a non-empty string");
    doc.continuation = j["continuation"].get<std::string>();
    return doc;
  }
  const auto& choices = j["choices"];
  if (!choices.is_array() || choices.empty()) throw fail("\"choices\" must be a non-empty list");
  for (const auto& c : choices) {
    if (!c.is_string() || c.get<std::string>().empty())
      throw fail("every choice must be a non-empty string");
    doc.choices.push_back(c.get<std::string>());
  }
  if (!j.contains("gold")) throw fail("missing integer field \"gold\"");
  if (!j["gold"].is_number_integer()) throw fail("\"gold\" must be an integer");
  doc.gold = j["gold"].get<int64_t>();
  if (doc.gold < 0 || doc.gold >= static_cast<int64_t>(doc.choices.size()))
    throw fail("\"gold\" " + std::to_string(doc.gold) + " is out of range for " +
               std::to_string(doc.choices.size()) + " choices");
  return doc;
}

}  // namespace

TaskFile task_file_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open task file " + path);
  TaskFile task;
  task.path = path;
  const size_t slash = path.find_last_of('/');
  task.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (task.name.size() > 6 && task.name.compare(task.name.size() - 6, 6, ".jsonl") == 0)
    task.name.resize(task.name.size() - 6);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    TaskDoc doc = task_doc_parse(line, number, path);
    const TaskType type =
        doc.choices.empty() ? TaskType::task_type_last_word : TaskType::task_type_multiple_choice;
    if (task.docs.empty()) {
      task.type = type;
    } else if (type != task.type) {
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": a " + task_type_name(type) +
                                  " line in a " + task_type_name(task.type) + " file");
    }
    task.docs.push_back(std::move(doc));
  }
  if (task.docs.empty()) throw std::invalid_argument(path + ": no documents");
  return task;
}

}  // namespace linear_ard::eval

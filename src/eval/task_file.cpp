// Reading and validating JSONL task files: this project's schema and lm-eval's samples log.
#include "linear_ard/eval/task_file.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace linear_ard::eval {

const char* task_type_name(TaskType type) {
  return type == TaskType::task_type_multiple_choice ? "multiple_choice" : "last_word";
}

const char* task_type_lm_eval_name(TaskType type) {
  return type == TaskType::task_type_multiple_choice ? "multiple_choice" : "loglikelihood";
}

namespace {

using nlohmann::json;

struct LineError {
  const std::string& where;
  int64_t number;
  std::invalid_argument operator()(const std::string& problem) const {
    return std::invalid_argument(where + ":" + std::to_string(number) + ": " + problem);
  }
};

TaskDoc task_doc_parse(const json& j, const std::string& target_delimiter, const LineError& fail) {
  TaskDoc doc;
  doc.doc = j;
  if (!j.contains("context") || !j["context"].is_string()) throw fail("missing string field \"context\"");
  doc.context = j["context"].get<std::string>();
  const bool mc = j.contains("choices"), lw = j.contains("continuation");
  if (mc == lw) throw fail("needs exactly one of \"choices\" (with \"gold\") and \"continuation\"");
  if (lw) {
    if (!j["continuation"].is_string() || j["continuation"].get<std::string>().empty())
      throw fail("\"continuation\" must be a non-empty string");
    doc.continuation = j["continuation"].get<std::string>();
    doc.logged_target = target_delimiter + doc.continuation;  // what the request continues with
    return doc;
  }
  const auto& choices = j["choices"];
  if (!choices.is_array() || choices.empty()) throw fail("\"choices\" must be a non-empty list");
  for (const auto& c : choices) {
    if (!c.is_string() || c.get<std::string>().empty())
      throw fail("every choice must be a non-empty string");
    doc.choices.push_back(c.get<std::string>());
  }
  // The argmax over one loglikelihood is always the gold: the question would score 100 % for any model.
  if (doc.choices.size() == 1)
    throw fail("\"choices\" has 1 choice: a question needs 2 or more (with one, every model scores it correct)");
  if (!j.contains("gold")) throw fail("missing integer field \"gold\"");
  if (!j["gold"].is_number_integer()) throw fail("\"gold\" must be an integer");
  doc.gold = j["gold"].get<int64_t>();
  if (doc.gold < 0 || doc.gold >= static_cast<int64_t>(doc.choices.size()))
    throw fail("\"gold\" " + std::to_string(doc.gold) + " is out of range for " +
               std::to_string(doc.choices.size()) + " choices");
  doc.logged_target = std::to_string(doc.gold);
  return doc;
}

// One request of lm-eval's "arguments": {"arg_0": context, "arg_1": continuation} or [context,
// continuation].
std::pair<std::string, std::string> lm_eval_request(const json& a, const LineError& fail) {
  const json* context = nullptr;
  const json* continuation = nullptr;
  if (a.is_object() && a.contains("arg_0") && a.contains("arg_1")) {
    context = &a["arg_0"];
    continuation = &a["arg_1"];
  } else if (a.is_array() && a.size() == 2) {
    context = &a[0];
    continuation = &a[1];
  }
  if (!context || !context->is_string() || !continuation->is_string() || continuation->get<std::string>().empty())
    throw fail("every request of \"arguments\" must be a (context, non-empty continuation) string pair");
  return {context->get<std::string>(), continuation->get<std::string>()};
}

TaskDoc lm_eval_sample_parse(const json& j, const std::string& target_delimiter, const LineError& fail) {
  TaskDoc doc;
  if (!j["doc_id"].is_number_integer()) throw fail("\"doc_id\" must be an integer");
  doc.doc_id = j["doc_id"].get<int64_t>();
  doc.doc = j.contains("doc") ? j["doc"] : json::object();
  const json& args = j["arguments"];
  if (args.is_object()) {
    // gen_args_0, gen_args_1, ...: in numeric order (the object's own order is lexicographic).
    std::vector<std::pair<int64_t, const json*>> numbered;
    for (const auto& [key, value] : args.items()) {
      if (key.rfind("gen_args_", 0) != 0 || key.size() == 9 ||
          key.find_first_not_of("0123456789", 9) != std::string::npos)
        throw fail("unexpected key \"" + key + "\" in \"arguments\" (expected gen_args_<i>)");
      numbered.emplace_back(std::stoll(key.substr(9)), &value);
    }
    std::sort(numbered.begin(), numbered.end());
    for (const auto& [index, value] : numbered) doc.requests.push_back(lm_eval_request(*value, fail));
  } else if (args.is_array()) {
    for (const auto& a : args) doc.requests.push_back(lm_eval_request(a, fail));
  } else {
    throw fail("\"arguments\" must be an object or a list");
  }
  if (doc.requests.empty()) throw fail("\"arguments\" holds no request");
  doc.context = doc.requests.front().first;
  if (j.contains("target")) doc.logged_target = j["target"].is_string() ? j["target"].get<std::string>() : j["target"].dump();
  if (doc.requests.size() == 1) {
    doc.continuation = doc.requests.front().second;
    return doc;
  }
  for (const auto& [context, continuation] : doc.requests)
    doc.choices.push_back(continuation.rfind(target_delimiter, 0) == 0 ? continuation.substr(target_delimiter.size())
                                                                         : continuation);
  if (!j.contains("target")) throw fail("missing field \"target\" (the gold choice)");
  const json& target = j["target"];
  if (target.is_number_integer()) {
    doc.gold = target.get<int64_t>();
  } else if (target.is_string()) {
    const std::string t = target.get<std::string>();
    if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos) {
      doc.gold = std::stoll(t);
    } else {
      for (size_t c = 0; c < doc.choices.size(); ++c)
        if (doc.choices[c] == t || doc.requests[c].second == t) doc.gold = static_cast<int64_t>(c);
      if (doc.gold < 0) throw fail("\"target\" \"" + t + "\" is neither an index nor one of the choices");
    }
  } else {
    throw fail("\"target\" must be an integer, its digits or the text of a choice (several golds are not supported)");
  }
  if (doc.gold < 0 || doc.gold >= static_cast<int64_t>(doc.choices.size()))
    throw fail("\"target\" " + std::to_string(doc.gold) + " is out of range for " +
               std::to_string(doc.choices.size()) + " choices");
  return doc;
}

// lm-eval names its logs samples_<task>_<ISO date>.jsonl.
std::string task_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.size() > 6 && name.compare(name.size() - 6, 6, ".jsonl") == 0) name.resize(name.size() - 6);
  static const std::regex lm_eval_log(R"(samples_(.+)_\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(\.\d+)?)");
  std::smatch m;
  if (std::regex_match(name, m, lm_eval_log)) return m[1].str();
  return name;
}

}  // namespace

TaskFile task_file_read(const std::string& path, const std::string& target_delimiter) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open task file " + path);
  TaskFile task;
  task.path = path;
  task.name = task_name_of(path);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const LineError fail{path, number};
    const auto j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw fail("not valid JSON");
    if (!j.is_object()) throw fail("expected a JSON object");
    const bool samples = j.contains("doc_id") && j.contains("arguments");
    if (!task.docs.empty() && samples != task.lm_eval_samples)
      throw fail(samples ? "an lm-eval samples line in a file of this project's schema"
                         : "a line of this project's schema in an lm-eval samples file");
    TaskDoc doc = samples ? lm_eval_sample_parse(j, target_delimiter, fail) : task_doc_parse(j, target_delimiter, fail);
    doc.line = number;
    if (!samples) doc.doc_id = static_cast<int64_t>(task.docs.size());
    const TaskType type =
        doc.choices.empty() ? TaskType::task_type_last_word : TaskType::task_type_multiple_choice;
    if (task.docs.empty()) {
      task.type = type;
      task.lm_eval_samples = samples;
    } else if (type != task.type) {
      throw fail(std::string("a ") + task_type_name(type) + " line in a " + task_type_name(task.type) + " file");
    }
    task.docs.push_back(std::move(doc));
  }
  if (task.docs.empty()) throw std::invalid_argument(path + ": no documents");
  return task;
}

}  // namespace linear_ard::eval

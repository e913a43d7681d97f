// Reading RULER-prepared JSONL samples.
#include "linear_ard/eval/ruler_prepared.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace linear_ard::eval {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

RulerPrepared ruler_prepared_read(const std::string& path, int64_t length) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  RulerPrepared p;
  p.path = path;
  const std::string stem = file.stem().string();
  p.task = stem == "validation" || stem == "test" ? file.parent_path().filename().string() : stem;
  try {
    ruler_task_find(p.task);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": the task is named by the file's folder (RULER's <task>/validation.jsonl) "
                                "or the file's name: " + e.what());
  }
  p.length = length;
  for (fs::path dir = fs::absolute(file).parent_path(); p.length == 0 && !dir.filename().empty(); dir = dir.parent_path())
    if (all_digits(dir.filename().string())) p.length = std::stoll(dir.filename().string());
  if (p.length <= 0)
    throw std::invalid_argument(path + ": no folder of the path names the length (RULER's <max_seq_length>); give --lengths");

  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open RULER file " + path);
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fail = [&](const std::string& problem) {
      return std::invalid_argument(path + ":" + std::to_string(number) + ": " + problem);
    };
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) throw fail("not a JSON object");
    if (!j.contains("index") || !j["index"].is_number_integer()) throw fail("missing integer field \"index\"");
    if (!j.contains("input") || !j["input"].is_string()) throw fail("missing string field \"input\"");
    if (!j.contains("answer_prefix") || !j["answer_prefix"].is_string())
      throw fail("missing string field \"answer_prefix\"");
    if (!j.contains("length") || !j["length"].is_number_integer()) throw fail("missing integer field \"length\"");
    if (!j.contains("outputs") || !j["outputs"].is_array() || j["outputs"].empty())
      throw fail("\"outputs\" must be a non-empty list of strings");
    RulerSample s;
    s.index = j["index"].get<int64_t>();
    s.prompt = j["input"].get<std::string>() + j["answer_prefix"].get<std::string>();
    for (const auto& o : j["outputs"]) {
      if (!o.is_string()) throw fail("\"outputs\" must be a non-empty list of strings");
      s.answers.push_back(o.get<std::string>());
    }
    s.haystack_type = "prepared";
    p.samples.push_back(std::move(s));
  }
  if (p.samples.empty()) throw std::invalid_argument(path + ": no samples");
  return p;
}

}  // namespace linear_ard::eval

// json_file: JSON files in transformers' layout, written through file_write_atomic.
#include "linear_ard/io/json_file.h"

#include <fstream>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"

namespace linear_ard::io {

nlohmann::json json_file_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("JSON file " + path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error("JSON file " + path + ": not valid JSON: " + e.what());
  }
}

void json_file_write(const std::string& path, const nlohmann::json& value) {
  // nlohmann::json keeps object keys sorted (sort_keys); ensure_ascii=true matches Python's
  // default \uXXXX escaping of non-ASCII text.
  file_write_atomic(path, value.dump(2, ' ', true) + "\n");
}

}  // namespace linear_ard::io

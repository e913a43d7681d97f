// json_file: read a JSON file with errors naming it; write one the way transformers does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace linear_ard::io {

// Throws std::runtime_error naming the file when it cannot be opened or is not valid JSON.
nlohmann::json json_file_read(const std::string& path);

// Atomically writes `value` as json.dumps(value, indent=2, sort_keys=True) + "\n" would
// (transformers' format for config.json and the shard index).
void json_file_write(const std::string& path, const nlohmann::json& value);

}  // namespace linear_ard::io

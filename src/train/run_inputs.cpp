// run_inputs: fingerprints of a run's input files, recorded and verified.
#include "run_inputs.h"

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "linear_ard/io/file_fingerprint.h"  // defines: file_fingerprint, file_fingerprint_changed
#include "linear_ard/io/hf_folder.h"         // defines: hf_tokenizer_file_names
#include "linear_ard/io/hf_weights.h"        // defines: hf_weights_index_name, hf_weights_single_name
#include "linear_ard/io/json_file.h"         // defines: json_file_read

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The tokenizer files of `folder` that exist.
std::vector<std::string> tokenizer_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const char* name : io::hf_tokenizer_file_names)
    if (fs::is_regular_file(fs::path(folder) / name)) files.push_back((fs::path(folder) / name).string());
  return files;
}

// config.json and the weights of a teacher folder: the index and every shard it names, or
// model.safetensors.
std::vector<std::string> teacher_files(const std::string& folder) {
  const fs::path dir(folder);
  std::vector<std::string> files{(dir / "config.json").string()};
  const fs::path index = dir / io::hf_weights_index_name;
  if (!fs::exists(index)) {
    files.push_back((dir / io::hf_weights_single_name).string());
    return files;
  }
  files.push_back(index.string());
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : io::json_file_read(index.string()).value("weight_map", json::object()).items())
    if (shard.is_string()) shards.insert(shard.get<std::string>());
  for (const auto& s : shards) files.push_back((dir / s).string());
  return files;
}

// The files `c` reads, by kind.
std::map<std::string, std::vector<std::string>> input_files(const RestoreConfig& c) {
  std::map<std::string, std::vector<std::string>> files;
  if (c.pretrain.enabled()) {
    files["tokenizer"] = tokenizer_files(c.pretrain.tokenizer);
    if (c.pretrain.model.is_string()) files["model_config"] = {c.pretrain.model.get<std::string>()};
  } else {
    files["teacher"] = teacher_files(c.teacher);
    files["tokenizer"] = tokenizer_files(c.teacher);
  }
  for (const auto& source : c.data) files["data"].push_back(source.path);
  return files;
}

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

}  // namespace

json run_inputs_record(const RestoreConfig& c) {
  json record = json::object();
  for (const auto& [kind, paths] : input_files(c)) {
    json list = json::array();
    for (const auto& p : paths) list.push_back(io::file_fingerprint_json(io::file_fingerprint(absolute(p))));
    record[kind] = list;
  }
  return record;
}

void run_inputs_verify(const json& recorded, const RestoreConfig& c) {
  std::string changes;
  const auto add = [&](const std::string& what) { changes += (changes.empty() ? "" : "; ") + what; };
  for (const auto& [kind, paths] : input_files(c)) {
    std::set<std::string> now;
    for (const auto& p : paths) now.insert(absolute(p));
    std::set<std::string> before;
    for (const json& entry : recorded.value(kind, json::array())) {
      const io::FileFingerprint f = io::file_fingerprint_from_json(entry);
      before.insert(f.path);
      if (const auto changed = io::file_fingerprint_changed(f)) add(kind + " file " + f.path + " " + *changed);
    }
    for (const auto& p : now)
      if (!before.count(p)) add(kind + " file " + p + " is read now but was not when the run started");
  }
  if (changes.empty()) return;
  throw std::invalid_argument("config key 'resume': the run's inputs changed since it started: " + changes +
                              "; resuming would train on other inputs than the checkpoint's; put the files back, or "
                              "start afresh with overwrite=true");
}

}  // namespace linear_ard::train

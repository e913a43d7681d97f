// restore_config_load: YAML + overrides -> RestoreConfig through one field table (key, member,
// parser, emitter, doc line: restore_config_fields.cpp), and the config written back as YAML and as
// the docs' key table.
#include "linear_ard/train/restore_config.h"

#include <algorithm>
#include <map>

#include <yaml-cpp/yaml.h>

#include "restore_config_fields.h"     // defines: config_fields, entry_parse, key_split
#include "restore_config_overrides.h"  // defines: config_file_read, override_apply
#include "restore_config_validate.h"   // defines: config_validate
#include "restore_config_values.h"     // defines: key_error

namespace linear_ard::train {

RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = config_file_read(path);
  std::map<std::string, std::string> spellings;
  for (const auto& o : overrides) override_apply(root, o, spellings);
  RestoreConfig c;
  for (const auto& kv : root) entry_parse(c, kv.first.as<std::string>(), kv.second);
  // Pretraining trains every tensor with the LM loss unless the config says otherwise (validated).
  if (c.pretrain.enabled()) {
    if (!root["method"]) c.method = Method::kCpt;
    if (!root["trainable"]) c.trainable = Trainable::kFull;
  }
  config_validate(c);
  return c;
}

std::string restore_config_to_yaml(const RestoreConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string open;  // the nested map being written
  for (const auto& f : config_fields()) {
    const auto [parent, name] = key_split(f.key);
    if (parent == "pretrain" && !c.pretrain.enabled()) continue;
    if (parent != open) {
      if (!open.empty()) out << YAML::EndMap;
      if (!parent.empty()) out << YAML::Key << parent << YAML::Value << YAML::BeginMap;
      open = parent;
    }
    out << YAML::Key << name << YAML::Value;
    f.emit(out, c);
  }
  if (!open.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<ConfigKeyDoc> restore_config_keys() {
  const RestoreConfig defaults;
  std::vector<ConfigKeyDoc> keys;
  for (const auto& f : config_fields()) {
    YAML::Emitter value;
    value << YAML::Flow;
    f.emit(value, defaults);
    keys.push_back({f.key, f.alias, value.c_str(), f.doc});
  }
  return keys;
}

std::string restore_config_keys_markdown() {
  std::string text = "| key | default | meaning |\n|---|---|---|\n";
  for (const auto& k : restore_config_keys()) {
    std::string key = "`" + k.key + "`";
    if (!k.alias.empty()) key += " (alias `" + k.alias + "`)";
    text += "| " + key + " | `" + k.default_yaml + "` | " + k.doc + " |\n";
  }
  return text;
}

std::vector<int64_t> restore_layers_resolve(const nlohmann::json& layers, int64_t num_layers) {
  std::vector<int64_t> out;
  if (layers.is_string()) {
    const std::string l = layers.get<std::string>();
    const int64_t k = l == "all" ? num_layers : std::stoll(l.substr(5));
    if (k > num_layers)
      key_error("layers", "(" + l + ") asks for more than the teacher's " + std::to_string(num_layers) + " layers");
    for (int64_t i = num_layers - k; i < num_layers; ++i) out.push_back(i);
    return out;
  }
  for (const auto& x : layers) {
    const int64_t i = x.get<int64_t>();
    if (i < -num_layers || i >= num_layers)
      key_error("layers", "(" + std::to_string(i) + ") is outside the teacher's " + std::to_string(num_layers) + " layers");
    out.push_back(i < 0 ? i + num_layers : i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace linear_ard::train

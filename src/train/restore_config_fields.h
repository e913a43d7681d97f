// The restore config's field table: each key once, with its alias, doc line, parser and YAML
// emitter, and the lookups over it (nested keys, aliases). Private to src/train.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

struct ConfigField {
  std::string key;    // dotted for nested maps: "stage2.lr"
  std::string alias;  // another spelling users bring from HF's Trainer arguments; empty: none
  std::string doc;    // the docs' line
  std::function<void(RestoreConfig&, const YAML::Node&)> parse;
  std::function<void(YAML::Emitter&, const RestoreConfig&)> emit;
};

// Every field, in the order of RestoreConfig's members (the docs' and resolved YAML's order).
const std::vector<ConfigField>& config_fields();
// The field of a dotted key, or null.
const ConfigField* field_find(const std::string& key);
// "stage2.lr" -> {"stage2", "lr"}; "lr" -> {"", "lr"}.
std::pair<std::string, std::string> key_split(const std::string& key);
// The top-level keys, in table order (a nested map once).
std::vector<std::string> top_keys();
// The sub-keys of a nested map ("stage2" -> steps, ctx_len, ...); none for a plain key.
std::vector<std::string> sub_keys(const std::string& parent);
// The canonical spelling of a top-level key (an alias's target, else the key itself).
std::string key_canonical(const std::string& key);
// Free-form maps: set through dotted overrides, checked by their own rules (student_rope's rope
// keys, pretrain.model's config.json keys).
bool is_free_map(const std::string& key);
// One top-level entry of the config file into `c`: a field, or a map of fields; a null value keeps
// the default. Throws naming an unknown sub-key.
void entry_parse(RestoreConfig& c, const std::string& key, const YAML::Node& v);

}  // namespace linear_ard::train

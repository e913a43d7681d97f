// restore_config_overrides: the config file's YAML tree, its aliases and the command line's
// overrides.
#include "restore_config_overrides.h"

#include <stdexcept>
#include <vector>

#include "restore_config_fields.h"  // defines: top_keys, sub_keys, key_canonical, is_free_map
#include "restore_config_values.h"  // defines: key_error, list_text

namespace linear_ard::train {
namespace {

void key_check_known(const std::string& key, const std::string& where) {
  const std::vector<std::string> keys = top_keys();
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  throw std::invalid_argument("unknown config key '" + key + "' in " + where + " (known keys: " + list_text(keys) + ")");
}

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

// A key given twice in one map (YAML allows it, yaml-cpp keeps both, the last would win silently).
void duplicates_check(const YAML::Node& map, const std::string& prefix, const std::string& path) {
  std::map<std::string, int> seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    const auto [it, fresh] = seen.emplace(key, line_of(kv.first));
    if (!fresh)
      throw std::invalid_argument("config file " + path + " line " + std::to_string(line_of(kv.first)) + ": key '" +
                                  prefix + key + "' is given twice (first at line " + std::to_string(it->second) + ")");
    if (kv.second.IsMap()) duplicates_check(kv.second, prefix + key + ".", path);
  }
}

// The root with every alias replaced by its key, in the same order; both spellings is an error.
YAML::Node aliases_resolve(const YAML::Node& root, const std::string& path) {
  YAML::Node out(YAML::NodeType::Map);
  std::map<std::string, std::pair<std::string, int>> given;  // canonical -> (spelling, line)
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const std::string canonical = key_canonical(key);
    const auto [it, fresh] = given.emplace(canonical, std::make_pair(key, line_of(kv.first)));
    if (!fresh)
      throw std::invalid_argument("config file " + path + " line " + std::to_string(line_of(kv.first)) + ": '" + key +
                                  "' and '" + it->second.first + "' (line " + std::to_string(it->second.second) +
                                  ") are two spellings of config key '" + canonical + "'; give one");
    key_check_known(canonical, path);
    out[canonical] = kv.second;
  }
  return out;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = s.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(s.substr(start, dot - start));
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

// yaml-cpp nodes are handles: assignment copies values, reset() rebinds, hence the explicit walk.
void override_apply(YAML::Node& root, const std::string& override_text, std::map<std::string, std::string>& spellings) {
  const size_t eq = override_text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("override '" + override_text + "' must be key=value");
  std::vector<std::string> parts = split_dots(override_text.substr(0, eq));
  const std::string canonical = key_canonical(parts[0]);
  const auto [it, fresh] = spellings.emplace(canonical, parts[0]);
  if (!fresh && it->second != parts[0])
    throw std::invalid_argument("overrides '" + it->second + "' and '" + parts[0] + "' are two spellings of config key '" +
                                canonical + "'; give one");
  parts[0] = canonical;
  key_check_known(parts[0], "override '" + override_text + "'");
  if (parts.size() > 1 && sub_keys(parts[0]).empty() && !is_free_map(parts[0]))
    key_error(parts[0], "has no sub-keys (override '" + override_text + "')");
  YAML::Node value;
  try {
    value = YAML::Load(override_text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("override '" + override_text + "': value is not valid YAML: " + e.what());
  }
  YAML::Node cur;
  cur.reset(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) key_error(override_text.substr(0, eq), "has an empty component");
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    if (!cur[parts[i]].IsMap()) key_error(override_text.substr(0, eq), "cannot be set: '" + parts[i] + "' is not a map");
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

YAML::Node config_file_read(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::invalid_argument("cannot read config file " + path);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("config file " + path + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw std::invalid_argument("config file " + path + " must hold a map of key: value");
  duplicates_check(root, "", path);
  return aliases_resolve(root, path);
}

}  // namespace linear_ard::train

// The restore config file as a YAML tree before it is parsed: read with duplicated keys refused and
// HF-style aliases resolved, and `key=value` overrides applied to it. Private to src/train.
#pragma once

#include <map>
#include <string>

#include <yaml-cpp/yaml.h>

namespace linear_ard::train {

// The root map of config file `path`, every alias replaced by its key. Throws std::invalid_argument
// naming the file (and lines) when it cannot be read, is not YAML or not a map, gives a key twice
// or under two spellings, or holds an unknown key.
YAML::Node config_file_read(const std::string& path);

// Applies one "key=value" override (dotted keys for nested maps; the value parsed as YAML) to
// `root`. `spellings` records the spelling each canonical key was given in, across the overrides:
// two spellings of one key are an error.
void override_apply(YAML::Node& root, const std::string& override_text, std::map<std::string, std::string>& spellings);

}  // namespace linear_ard::train

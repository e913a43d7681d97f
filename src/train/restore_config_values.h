// The values of the restore config's keys, by member type: YAML parsed into each (errors naming the
// key and what it must be) and emitted back, and the free-form values (student_rope, layers,
// pretrain.model). The field table (restore_config_fields.h) is built from them. Private to src/train.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "linear_ard/io/text_dataset.h"  // defines: TextSource
#include "linear_ard/train/config_names.h"

namespace linear_ard::train {

// Throws std::invalid_argument "config key '<key>' <what>".
[[noreturn]] void key_error(const std::string& key, const std::string& what);
// key_error unless `ok`.
void key_check(bool ok, const std::string& key, const std::string& what);
// "a, b, c": a list for error messages.
std::string list_text(const std::vector<std::string>& items);

template <class T>
T scalar_as(const YAML::Node& node, const std::string& key, const std::string& type_name) {
  if (!node.IsScalar()) key_error(key, "must be " + type_name);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    key_error(key, "must be " + type_name + ", got '" + node.Scalar() + "'");
  }
}

// YAML scalars carry no type: integers, then numbers, then booleans, else strings.
nlohmann::json yaml_to_json(const YAML::Node& node);

// ---- values by member type: parse (`what`, when not null, replaces the type's description in
// errors) and emit

void value_parse(const YAML::Node& v, const std::string& key, int64_t& out, const char* what);
void value_parse(const YAML::Node& v, const std::string& key, uint64_t& out, const char* what);
void value_parse(const YAML::Node& v, const std::string& key, double& out, const char* what);
void value_parse(const YAML::Node& v, const std::string& key, bool& out, const char* what);
void value_parse(const YAML::Node& v, const std::string& key, std::string& out, const char* what);
// A data file or a list of them, each a path or {path: FILE, field: KEY}; errors name the entry
// (`data[2].field`).
void value_parse(const YAML::Node& v, const std::string& key, std::vector<io::TextSource>& out, const char* what);
// A list of numbers (or one number); errors name the entry (`val_passkey.lengths[1]`).
void value_parse(const YAML::Node& v, const std::string& key, std::vector<int64_t>& out, const char* what);
void value_parse(const YAML::Node& v, const std::string& key, std::vector<double>& out, const char* what);
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void value_parse(const YAML::Node& v, const std::string& key, E& out, const char*) {
  const std::string name = scalar_as<std::string>(v, key, enum_names_text<E>());
  const std::optional<E> e = enum_from_name<E>(name);
  if (!e) key_error(key, "must be " + enum_names_text<E>() + ", got '" + name + "'");
  out = *e;
}

void value_emit(YAML::Emitter& out, int64_t v);
void value_emit(YAML::Emitter& out, uint64_t v);
void value_emit(YAML::Emitter& out, double v);
void value_emit(YAML::Emitter& out, bool v);
void value_emit(YAML::Emitter& out, const std::string& v);
// A file whose records keep their text under "text" is written as its path alone.
void value_emit(YAML::Emitter& out, const std::vector<io::TextSource>& v);
void value_emit(YAML::Emitter& out, const std::vector<int64_t>& v);
void value_emit(YAML::Emitter& out, const std::vector<double>& v);
// JSON is YAML flow syntax, so maps and lists round-trip without a second converter.
void value_emit(YAML::Emitter& out, const nlohmann::json& v);
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void value_emit(YAML::Emitter& out, E v) {
  out << enum_name(v);
}

// ---- the free-form values, in the value_parse shape

// student_rope: a map, taken as JSON (restore_config_validate checks its keys).
void student_rope_parse(const YAML::Node& v, const std::string& key, nlohmann::json& out, const char*);
// layers: "last:k", "all" or a non-empty list of layer indices.
void layers_parse(const YAML::Node& v, const std::string& key, nlohmann::json& out, const char*);
// pretrain.model: a map of config.json keys or a config.json path.
void pretrain_model_parse(const YAML::Node& v, const std::string& key, nlohmann::json& out, const char*);
// checkpoint_layers: true (model::kRecomputeAll), false (0) or a count of layers >= 0; emitted back
// the same way.
void checkpoint_layers_parse(const YAML::Node& v, const std::string& key, int64_t& out, const char*);
void checkpoint_layers_emit(YAML::Emitter& out, int64_t v);

}  // namespace linear_ard::train

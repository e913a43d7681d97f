// restore_config_values: YAML <-> the config's member types.
#include "restore_config_values.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "linear_ard/model/llama_model.h"  // defines: kRecomputeAll

namespace linear_ard::train {
namespace {

using nlohmann::json;

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  // "2e-05" is a string to YAML 1.1 readers (PyYAML): the mantissa gets its ".0" to stay a number.
  std::string text = buf;
  const auto e = text.find('e');
  if (e != std::string::npos && text.find('.') == std::string::npos) text.insert(e, ".0");
  return text;
}

// One data file: a path, or a map {path: ..., field: ...} naming the text's key in its JSON records.
io::TextSource source_parse(const YAML::Node& v, const std::string& key) {
  const char* what = "a file path or a map {path: FILE, field: KEY}";
  if (!v.IsMap()) return {scalar_as<std::string>(v, key, what)};
  io::TextSource s;
  for (const auto& kv : v) {
    const std::string name = kv.first.as<std::string>();
    if (name == "path") s.path = scalar_as<std::string>(kv.second, key + ".path", "a file path");
    else if (name == "field") s.field = scalar_as<std::string>(kv.second, key + ".field", "a JSON key");
    else throw std::invalid_argument("unknown config key '" + key + "." + name + "' (a data file's keys: path, field)");
  }
  key_check(!s.path.empty(), key + ".path", "is required (the data file)");
  key_check(!s.field.empty(), key + ".field", "must not be empty (the key of the text in JSON records)");
  return s;
}

// A number list: a sequence of scalars, or one scalar as a list of one.
template <class T>
void list_parse(const YAML::Node& v, const std::string& key, std::vector<T>& out, const char* what) {
  out.clear();
  if (!v.IsSequence()) {
    out.push_back(scalar_as<T>(v, key, what));
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) out.push_back(scalar_as<T>(v[i], key + "[" + std::to_string(i) + "]", what));
}

}  // namespace

void key_error(const std::string& key, const std::string& what) {
  throw std::invalid_argument("config key '" + key + "' " + what);
}

void key_check(bool ok, const std::string& key, const std::string& what) {
  if (!ok) key_error(key, what);
}

std::string list_text(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& k : items) text += (text.empty() ? "" : ", ") + k;
  return text;
}

json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    json j = json::object();
    for (const auto& kv : node) j[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return j;
  }
  if (node.IsSequence()) {
    json j = json::array();
    for (const auto& x : node) j.push_back(yaml_to_json(x));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  int64_t i;
  double d;
  bool b;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  if (YAML::convert<bool>::decode(node, b)) return b;
  return node.Scalar();
}

void value_parse(const YAML::Node& v, const std::string& key, int64_t& out, const char* what) {
  out = scalar_as<int64_t>(v, key, what ? what : "an integer");
}
void value_parse(const YAML::Node& v, const std::string& key, uint64_t& out, const char* what) {
  out = scalar_as<uint64_t>(v, key, what ? what : "a non-negative integer");
}
void value_parse(const YAML::Node& v, const std::string& key, double& out, const char* what) {
  out = scalar_as<double>(v, key, what ? what : "a number");
  // YAML reads .inf and .nan as numbers; no key of the config has a use for them (an infinite lr or
  // factor only surfaces later, as NaN losses or an overflowed integer).
  if (!std::isfinite(out)) key_error(key, "must be a finite number, got " + v.Scalar());
}
void value_parse(const YAML::Node& v, const std::string& key, bool& out, const char* what) {
  out = scalar_as<bool>(v, key, what ? what : "true or false");
}
void value_parse(const YAML::Node& v, const std::string& key, std::string& out, const char* what) {
  out = scalar_as<std::string>(v, key, what ? what : "a string");
}

void value_parse(const YAML::Node& v, const std::string& key, std::vector<io::TextSource>& out, const char*) {
  out.clear();
  if (!v.IsSequence()) {
    out = {source_parse(v, key)};
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) out.push_back(source_parse(v[i], key + "[" + std::to_string(i) + "]"));
}

void value_parse(const YAML::Node& v, const std::string& key, std::vector<int64_t>& out, const char* what) {
  list_parse(v, key, out, what ? what : "a list of integers");
}

void value_parse(const YAML::Node& v, const std::string& key, std::vector<double>& out, const char* what) {
  list_parse(v, key, out, what ? what : "a list of numbers");
}

void value_emit(YAML::Emitter& out, int64_t v) { out << v; }
void value_emit(YAML::Emitter& out, uint64_t v) { out << v; }
void value_emit(YAML::Emitter& out, double v) { out << number_text(v); }
void value_emit(YAML::Emitter& out, bool v) { out << v; }
void value_emit(YAML::Emitter& out, const std::string& v) { out << v; }
void value_emit(YAML::Emitter& out, const std::vector<io::TextSource>& v) {
  out << YAML::BeginSeq;
  for (const auto& s : v) {
    if (s.field == io::TextSource().field) out << s.path;
    else out << YAML::Flow << YAML::BeginMap << YAML::Key << "path" << YAML::Value << s.path << YAML::Key << "field"
             << YAML::Value << s.field << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void value_emit(YAML::Emitter& out, const std::vector<int64_t>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int64_t x : v) out << x;
  out << YAML::EndSeq;
}

void value_emit(YAML::Emitter& out, const std::vector<double>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (double x : v) out << number_text(x);
  out << YAML::EndSeq;
}

void value_emit(YAML::Emitter& out, const json& v) { out << YAML::Flow << YAML::Load(v.dump()); }

void student_rope_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  key_check(v.IsMap(), key, "must be a map, e.g. {rope_type: linear, factor: 8}");
  out = yaml_to_json(v);
}

void layers_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  const char* what = "last:k, all or a list of layer indices";
  if (!v.IsSequence()) {
    out = scalar_as<std::string>(v, key, what);
    return;
  }
  out = json::array();
  for (const auto& x : v) out.push_back(scalar_as<int64_t>(x, key, what));
  key_check(!out.empty(), key, "must not be an empty list");
}

void checkpoint_layers_parse(const YAML::Node& v, const std::string& key, int64_t& out, const char*) {
  const char* what = "true, false or a number of layers >= 0";
  int64_t n = 0;
  if (v.IsScalar() && YAML::convert<int64_t>::decode(v, n)) {
    key_check(n >= 0, key, std::string("must be ") + what + ", got " + std::to_string(n));
    out = n;
  } else {
    out = scalar_as<bool>(v, key, what) ? model::kRecomputeAll : 0;
  }
}

void checkpoint_layers_emit(YAML::Emitter& out, int64_t v) {
  if (v == model::kRecomputeAll || v == 0) out << (v != 0);
  else out << v;
}

void pretrain_model_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  out = v.IsMap() ? yaml_to_json(v) : json(scalar_as<std::string>(v, key, "a map of config.json keys or a config.json path"));
}

}  // namespace linear_ard::train

// config_names: enums of the run config with their YAML names (one table per enum, as RopeType's),
// and the lookups both ways.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace linear_ard::train {

// Specialised next to each enum: `static constexpr std::pair<E, const char*> entries[]`, one per
// value, in the order the docs list them.
template <class E>
struct NameTable;

template <class E>
const char* enum_name(E value) {
  for (const auto& [v, name] : NameTable<E>::entries)
    if (v == value) return name;
  return "?";
}

template <class E>
std::optional<E> enum_from_name(const std::string& name) {
  for (const auto& [v, n] : NameTable<E>::entries)
    if (name == n) return v;
  return std::nullopt;
}

// "a, b or c": the names for error messages.
template <class E>
std::string enum_names_text() {
  std::string text;
  const auto& entries = NameTable<E>::entries;
  const size_t count = std::size(entries);
  for (size_t i = 0; i < count; ++i)
    text += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(entries[i].second);
  return text;
}

}  // namespace linear_ard::train

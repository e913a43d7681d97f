// tune_grid: the declared grid of `linear-ard tune` and its combinations.
#include <set>
#include <stdexcept>

#include "linear_ard/train/tune.h"

namespace linear_ard::train {
namespace {

// Keys the trials set themselves (their steps, folders and resumption): a grid over them would be
// overwritten or would break the comparison at equal budgets.
const std::set<std::string>& keys_reserved() {
  static const std::set<std::string> keys{"steps",      "warmup_steps", "stage2.steps",    "stage2.warmup_steps",
                                          "eval_every", "output",       "resume",          "overwrite",
                                          "stop_after_step"};
  return keys;
}

// `text` split on the commas outside brackets and quotes.
std::vector<std::string> values_split(const std::string& text) {
  std::vector<std::string> values{""};
  int depth = 0;
  char quote = 0;
  for (char ch : text) {
    if (quote) {
      if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '[' || ch == '{') {
      ++depth;
    } else if (ch == ']' || ch == '}') {
      --depth;
    } else if (ch == ',' && depth == 0) {
      values.emplace_back();
      continue;
    }
    values.back() += ch;
  }
  return values;
}

// The keys an axis sets: "lr" or, linked to one value, "lr,stage2.lr".
std::vector<std::string> axis_keys(const std::string& key) {
  std::vector<std::string> keys{""};
  for (char ch : key) {
    if (ch == ',') keys.emplace_back();
    else keys.back() += ch;
  }
  return keys;
}

}  // namespace

std::vector<TuneAxis> tune_grid_parse(const std::vector<std::string>& specs) {
  std::vector<TuneAxis> grid;
  std::set<std::string> seen;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--grid '" + spec + "': expected KEY=V1,V2,... (e.g. lr=1e-3,3e-3)");
    TuneAxis axis{spec.substr(0, eq), values_split(spec.substr(eq + 1))};
    for (const std::string& key : axis_keys(axis.key)) {
      if (key.empty()) throw std::invalid_argument("--grid '" + spec + "': an empty key");
      if (keys_reserved().count(key))
        throw std::invalid_argument("--grid '" + spec + "': key '" + key +
                                    "' is set by tune itself (each trial runs --trial-fraction of the config's steps); "
                                    "set the full run's steps in the config or as an override");
      if (!seen.insert(key).second) throw std::invalid_argument("--grid: key '" + key + "' is given twice");
    }
    for (const std::string& v : axis.values)
      if (v.empty()) throw std::invalid_argument("--grid '" + spec + "': an empty value");
    grid.push_back(axis);
  }
  return grid;
}

std::vector<std::vector<std::string>> tune_grid_expand(const std::vector<TuneAxis>& grid) {
  std::vector<std::vector<std::string>> combos{{}};
  for (const TuneAxis& axis : grid) {
    std::vector<std::vector<std::string>> next;
    for (const auto& combo : combos)
      for (const std::string& v : axis.values) {
        next.push_back(combo);
        for (const std::string& key : axis_keys(axis.key)) next.back().push_back(key + "=" + v);
      }
    combos = std::move(next);
  }
  return combos;
}

}  // namespace linear_ard::train

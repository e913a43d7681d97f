// arg_checks: numeric validators, output paths against inputs, unknown subcommand names.
#include "arg_checks.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

namespace linear_ard::cli {
namespace {

namespace fs = std::filesystem;

// The value of `text` as an integer, or nullopt (CLI11 has converted it already; this reads it for
// the range, "12abc" included as not an integer).
std::optional<int64_t> integer_of(const std::string& text) {
  int64_t value = 0;
  if (!CLI::detail::lexical_cast(text, value)) return std::nullopt;
  return value;
}

// A path made absolute and normal without needing it to exist (symlinks of the existing part resolved).
fs::path path_normal(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

bool path_inside(const fs::path& path, const fs::path& folder) {
  const auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return f == folder.end();
}

// Levenshtein distance, for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string subcommand_message(const CLI::App& app, const std::string& name) {
  std::string names, nearest;
  size_t best = 3;  // at most 2 edits away
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    const size_t d = edit_distance(name, sub->get_name());
    if (d < best) best = d, nearest = sub->get_name();
  }
  const std::string where = app.get_parent() ? "unknown " + app.get_name() + " command '" : "unknown command '";
  return where + name + "' (" + (app.get_parent() ? app.get_name() + " commands: " : "commands: ") + names + ")" +
         (nearest.empty() ? "" : "; did you mean '" + nearest + "'?");
}

}  // namespace

CLI::Validator int_at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& input) {
        const auto value = integer_of(input);
        if (value && *value >= min) return std::string();
        return "must be an integer >= " + std::to_string(min) + ", got " + input;
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator int_zero_or_at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& input) {
        const auto value = integer_of(input);
        if (value && (*value == 0 || *value >= min)) return std::string();
        return "must be 0 or an integer >= " + std::to_string(min) + ", got " + input;
      },
      "0|INT>=" + std::to_string(min));
}

CLI::Validator number_in(double lo, double hi, bool lo_open) {
  std::ostringstream range;
  range << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
  return CLI::Validator(
      [lo, hi, lo_open, text = range.str()](std::string& input) {
        double value = 0;
        const bool ok = CLI::detail::lexical_cast(input, value) && std::isfinite(value) &&
                        (lo_open ? value > lo : value >= lo) && value <= hi;
        return ok ? std::string() : "must be a number in " + text + ", got " + input;
      },
      "NUMBER in " + range.str());
}

void output_paths_check(const std::string& option, const std::vector<std::string>& written,
                        const std::vector<std::string>& folders, const std::vector<std::string>& inputs) {
  for (const std::string& w : written) {
    const fs::path path = path_normal(w);
    for (const std::string& folder : folders)
      if (path_inside(path, path_normal(folder)))
        usage_error(option + " would write " + w + " inside the model folder " + folder +
                    " it reads; choose a path outside it");
    for (const std::string& input : inputs)
      if (path == path_normal(input)) usage_error(option + " would overwrite " + w + ", one of the command's inputs");
  }
}

std::string subcommand_unknown(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') return "";  // an option: CLI11 parses (and names) the rest
    const auto subs = level->get_subcommands({});
    if (subs.empty()) return "";
    const auto it = std::find_if(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(arg); });
    if (it == subs.end()) return subcommand_message(*level, arg);
    level = *it;
  }
  return "";
}

}  // namespace linear_ard::cli

// arg_checks: what every subcommand checks of its arguments beyond their types: numeric ranges as
// CLI11 validators (a usage error, exit status 2, naming the option and the value it got) and the
// places a command may write (never inside a model folder it reads, never over one of its inputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace linear_ard::cli {

// A wrong combination of options found after parsing: reported like a parse error (exit code 2).
[[noreturn]] inline void usage_error(const std::string& message) { throw CLI::ValidationError(message); }

// An integer of at least `min`: `--samples 0` -> "--samples: must be an integer >= 1, got 0".
CLI::Validator int_at_least(int64_t min);
// 0 (the option's "off" or "default") or an integer of at least `min`.
CLI::Validator int_zero_or_at_least(int64_t min);
// A finite number in [lo, hi]; `lo_open` excludes lo.
CLI::Validator number_in(double lo, double hi, bool lo_open = false);

// Refuses (usage error naming `option`) each of `written` (the files or folders the command will
// write) that lies inside one of `folders` (model folders it reads) or is one of `inputs` (files it
// reads): `eval ppl MODEL -o MODEL/config` would otherwise replace the model's config.json.
void output_paths_check(const std::string& option, const std::vector<std::string>& written,
                        const std::vector<std::string>& folders, const std::vector<std::string>& inputs);

// The first subcommand name on the command line (at the top level, or under a command taking
// subcommands, e.g. `eval`) that `app` does not know: "unknown command 'restor' (commands: ...)",
// with the nearest name when one is close; empty when every name is known.
std::string subcommand_unknown(const CLI::App& app, int argc, const char* const* argv);

}  // namespace linear_ard::cli

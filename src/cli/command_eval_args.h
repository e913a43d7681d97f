// Options every `linear-ard eval` subcommand shares (model folder, device, dtype, report stem), the
// report output, and the registration of the subcommands that live in their own files.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "linear_ard/dist/distributed.h"     // defines: distributed_joined
#include "linear_ard/eval/report.h"          // defines: report_write
#include "linear_ard/eval/ruler.h"           // defines: RulerOptions
#include "linear_ard/eval/ruler_data.h"      // defines: ruler_data_read
#include "linear_ard/eval/ruler_prepared.h"  // defines: ruler_prepared_read

namespace linear_ard::cli {

struct EvalDeviceArgs {
  std::string device = "auto";
  std::string dtype = "auto";
  std::string output;  // report stem: <output>.md and <output>.json
  bool quiet = false;  // no progress lines on stderr
};

inline void eval_device_args_add(CLI::App* sub, EvalDeviceArgs& a) {
  sub->add_option("--device", a.device, "cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  sub->add_option("--dtype", a.dtype, "fp32, bf16 or auto (bf16 on cuda, fp32 on cpu)")
      ->check(CLI::IsMember({"fp32", "bf16", "auto"}))
      ->capture_default_str();
  sub->add_option("--output,-o", a.output, "write the report to OUTPUT.md and OUTPUT.json");
  sub->add_flag("--quiet,-q", a.quiet, "no progress lines on stderr");
}

// A wrong combination of options found after parsing: reported like a parse error (exit code 2).
[[noreturn]] inline void usage_error(const std::string& message) { throw CLI::ValidationError(message); }

// Whether this process writes reports: always, but for ranks other than 0 of a torchrun launch
// (every rank holds the gathered result; rank 0 writes it).
inline bool eval_writes() {
  const dist::Distributed* d = dist::distributed_joined();
  return !d || d->is_main();
}

// Prints the markdown; with -o also writes OUTPUT.md and OUTPUT.json atomically (rank 0 only).
inline void eval_report_emit(const std::string& output, const std::string& markdown, const nlohmann::json& json) {
  if (!eval_writes()) return;
  std::cout << markdown;
  if (!output.empty()) eval::report_write(output, markdown, json);
}

// RULER's options; `prefix` is "" for `eval ruler` (--lengths) and "ruler-" for `eval compare`
// (--ruler-lengths). The data files are shared by both (--haystack, --words, --squad, --hotpotqa).
struct RulerArgs {
  eval::RulerOptions options;
  std::string haystack, words, squad, hotpot;
  std::vector<std::string> prepared;  // RULER-prepared JSONL files
};

inline void ruler_args_add(CLI::App* sub, RulerArgs& a, const std::string& prefix) {
  sub->add_option("--" + prefix + "lengths", a.options.lengths,
                  "RULER lengths in tokens (prompt + answer); with --" + prefix +
                      "prepared, one length for all its files (default: from their paths)");
  sub->add_option("--" + prefix + "prepared", a.prepared,
                  "RULER-prepared JSONL files (NVIDIA/RULER prepare.py's <length>/data/<task>/validation.jsonl) "
                  "to evaluate instead of generated samples")
      ->check(CLI::ExistingFile);
  sub->add_option("--" + prefix + "tasks", a.options.tasks,
                  "RULER tasks (default: the 11 synthetic ones, plus qa_1 / qa_2 when --squad / --hotpotqa is given)");
  sub->add_option("--" + prefix + "samples", a.options.samples, "RULER samples per task and length")->capture_default_str();
  sub->add_option("--" + prefix + "seed", a.options.seed, "RULER sample seed")->capture_default_str();
  sub->add_option("--haystack", a.haystack, "essay text for the essay-haystack tasks (default: the noise haystack)")
      ->check(CLI::ExistingFile);
  sub->add_option("--words", a.words, "word list, one per line (default: whole-word tokens of the tokenizer)")
      ->check(CLI::ExistingFile);
  sub->add_option("--squad", a.squad, "SQuAD v2 JSON for qa_1")->check(CLI::ExistingFile);
  sub->add_option("--hotpotqa", a.hotpot, "HotpotQA JSON for qa_2")->check(CLI::ExistingFile);
}

// Whether RULER was asked for: lengths or prepared files.
inline bool ruler_args_given(const RulerArgs& a) { return !a.options.lengths.empty() || !a.prepared.empty(); }

// Reads the prepared files, or the data files and fills the default task list (the word list
// default needs the tokenizer).
inline eval::RulerData ruler_args_resolve(RulerArgs& a, bool quiet) {
  a.options.progress = !quiet;
  if (!a.prepared.empty()) {
    if (!a.options.tasks.empty()) usage_error("RULER-prepared files name their own tasks: give no RULER tasks with them");
    if (a.options.lengths.size() > 1) usage_error("RULER-prepared files take at most one length");
    for (const auto& p : a.prepared)
      a.options.prepared.push_back(eval::ruler_prepared_read(p, a.options.lengths.empty() ? 0 : a.options.lengths[0]));
    return {};
  }
  if (a.options.lengths.empty()) usage_error("RULER needs lengths (or RULER-prepared files)");
  eval::RulerData data = eval::ruler_data_read(a.haystack, a.words, a.squad, a.hotpot);
  if (a.options.tasks.empty()) {
    for (const auto& t : eval::ruler_tasks())
      if (t.kind != eval::RulerKind::ruler_kind_qa || (t.dataset == "squad" ? data.squad : data.hotpot))
        a.options.tasks.push_back(t.name);
  }
  for (const auto& t : a.options.tasks) eval::ruler_task_find(t);  // unknown names fail before loading models
  return data;
}

// `eval ruler` (command_eval_ruler.cpp), `eval compare` (command_eval_compare.cpp) and `eval requests`
// (command_eval_requests.cpp).
void eval_ruler_register(CLI::App& eval);
void eval_compare_register(CLI::App& eval);
void eval_requests_register(CLI::App& eval);

}  // namespace linear_ard::cli

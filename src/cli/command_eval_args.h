// Options every `linear-ard eval` subcommand shares (model folder, device, dtype, report stem), the
// report output, and the registration of the subcommands that live in their own files.
#pragma once

#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "linear_ard/eval/report.h"      // defines: report_write
#include "linear_ard/eval/ruler.h"       // defines: RulerOptions
#include "linear_ard/eval/ruler_data.h"  // defines: ruler_data_read
#include "linear_ard/train/distributed.h"  // defines: distributed_joined

namespace linear_ard::cli {

struct EvalDeviceArgs {
  std::string device = "auto";
  std::string dtype = "auto";
  std::string output;  // report stem: <output>.md and <output>.json
};

inline void eval_device_args_add(CLI::App* sub, EvalDeviceArgs& a) {
  sub->add_option("--device", a.device, "cpu, cuda or auto")->capture_default_str();
  sub->add_option("--dtype", a.dtype, "fp32, bf16 or auto (bf16 on cuda, fp32 on cpu)")->capture_default_str();
  sub->add_option("--output,-o", a.output, "write the report to OUTPUT.md and OUTPUT.json");
}

// Whether this process writes reports: always, but for ranks other than 0 of a torchrun launch
// (every rank holds the gathered result; rank 0 writes it).
inline bool eval_writes() {
  const train::Distributed* d = train::distributed_joined();
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
  bool quiet = false;
};

inline void ruler_args_add(CLI::App* sub, RulerArgs& a, const std::string& prefix, bool lengths_required) {
  auto* lengths = sub->add_option("--" + prefix + "lengths", a.options.lengths, "RULER lengths in tokens (prompt + answer)");
  if (lengths_required) lengths->required();
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
  sub->add_flag("--quiet", a.quiet, "no progress lines on stderr");
}

// Reads the data files and fills the default task list; the word list default needs the tokenizer.
inline eval::RulerData ruler_args_resolve(RulerArgs& a) {
  eval::RulerData data = eval::ruler_data_read(a.haystack, a.words, a.squad, a.hotpot);
  if (a.options.tasks.empty()) {
    for (const auto& t : eval::ruler_tasks())
      if (t.kind != eval::RulerKind::ruler_kind_qa || (t.dataset == "squad" ? data.squad : data.hotpot))
        a.options.tasks.push_back(t.name);
  }
  for (const auto& t : a.options.tasks) eval::ruler_task_find(t);  // unknown names fail before loading models
  a.options.progress = !a.quiet;
  return data;
}

// `eval ruler` (command_eval_ruler.cpp) and `eval compare` (command_eval_compare.cpp).
void eval_ruler_register(CLI::App& eval);
void eval_compare_register(CLI::App& eval);

}  // namespace linear_ard::cli

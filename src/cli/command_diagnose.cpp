// `linear-ard diagnose TEACHER --length L --text FILE`: the damage of each candidate RoPE scaling
// before any training, one table with a recommendation, OUT/diagnose.{md,json} and the plot
// OUT/diagnose.{png,svg} (docs/diagnose.md).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "command_eval_args.h"            // defines: EvalDeviceArgs, eval_device_args_add, eval_writes, usage_error
#include "commands.h"
#include "linear_ard/eval/diagnose.h"      // defines: diagnose_run, diagnose_report_*
#include "linear_ard/eval/eval_model.h"    // defines: eval_model_load
#include "linear_ard/eval/report.h"        // defines: report_write
#include "linear_ard/io/hf_folder.h"       // defines: hf_folder_load
#include "linear_ard/io/model_path.h"      // defines: model_path_resolve
#include "linear_ard/io/tokenizer.h"       // defines: tokenizer_load
#include "plot_run.h"                      // defines: plot_run

namespace linear_ard::cli {

namespace {

// The settings that differ between a GPU and a CPU when not given: passkey prompts a length and
// depth (4: 20 prompts a length; 1 on a CPU: 5) and text blocks (16; 4 on a CPU).
struct DiagnoseArgs : EvalDeviceArgs {
  std::string teacher;
  io::TextSource text;
  eval::DiagnoseOptions options;
  int64_t samples = 0, blocks = 0;  // 0: the device's default
};

void diagnose_options_add(CLI::App* sub, DiagnoseArgs& a) {
  eval::DiagnoseOptions& o = a.options;
  o.scalings = eval::diagnose_scaling_names();
  sub->add_option("TEACHER", a.teacher, "HF model folder (or cached hub name) at its native RoPE")->required();
  sub->add_option("--length", o.length, "target context length L (the factor is L / native)")->required()
      ->check(CLI::PositiveNumber);
  sub->add_option("--scalings", o.scalings, "candidate scalings, comma-separated")->delimiter(',')
      ->check(CLI::IsMember(eval::diagnose_scaling_names()))->capture_default_str();
  sub->add_option("--text", a.text.path, "held-out text: plain text, .jsonl or .json records (docs/eval.md)")
      ->required()->check(CLI::ExistingFile);
  sub->add_option("--text-field", a.text.field, "key of the text in JSON records")->capture_default_str();
  sub->add_option("--ctx", o.ctx, "short context C of KL, PPL and relation KL (default: min(2048, native))");
  sub->add_option("--blocks", a.blocks, "blocks of C tokens of the text (default: 16 on a GPU, 4 on a CPU)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--samples", a.samples, "passkey prompts per length and depth (default: 4 on a GPU, 1 on a CPU)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--depths", o.passkey_depths, "passkey depths in [0, 1]")->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "seed of the first passkey prompt")->capture_default_str();
  sub->add_flag("--all-layers", o.all_layers, "relation KL of every layer (default: the final layer's)");
  sub->add_option("--relation-length", o.relation_length,
                  "also the final layer's relation KL on one block of this many tokens (e.g. L)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--margin", o.margin, "recommendation: passkey points at L from the best")
      ->check(CLI::Range(0.0, 100.0))->capture_default_str();
  sub->add_option("--batch-size", o.batch_size, "blocks per forward")->check(CLI::PositiveNumber)->capture_default_str();
  eval_device_args_add(sub, a);
  sub->get_option("--output")->description("write OUTPUT/diagnose.md, .json, .png and .svg");
}

void diagnose_command_run(DiagnoseArgs& a) {
  a.teacher = io::model_path_resolve(a.teacher);  // a hub name: its snapshot in the local cache
  const io::HfFolder folder = io::hf_folder_load(a.teacher, /*load_weights=*/false);
  eval::DiagnoseOptions o = a.options;
  if (o.ctx == 0) o.ctx = std::min<int64_t>(2048, folder.model_config.max_position_embeddings);
  o.progress = !a.quiet;
  // Bad options fail before the weights are read.
  eval::diagnose_options_check(folder, *io::tokenizer_load(a.teacher), o);
  const eval::EvalModel teacher = eval::eval_model_load(a.teacher, a.device, a.dtype);
  const bool gpu = teacher.device_name != "cpu";
  o.passkey_samples = a.samples > 0 ? a.samples : (gpu ? 4 : 1);
  o.blocks = a.blocks > 0 ? a.blocks : (gpu ? 16 : 4);
  const eval::DiagnoseResult result = eval::diagnose_run(teacher, folder, a.text, o);
  if (!eval_writes()) return;  // under torchrun, rank 0 reports
  const std::string markdown = eval::diagnose_report_markdown(result);
  std::cout << markdown;
  if (a.output.empty()) return;
  std::filesystem::create_directories(a.output);
  const std::string stem = (std::filesystem::path(a.output) / "diagnose").string();
  eval::report_write(stem, markdown, eval::diagnose_report_json(result));
  plot_run({"diagnose", stem + ".json", "-o", stem}, a.quiet);
}

}  // namespace

void command_diagnose_register(CLI::App& app) {
  auto a = std::make_shared<DiagnoseArgs>();
  CLI::App* sub = app.add_subcommand(
      "diagnose", "Damage of each candidate RoPE scaling before training: KL to native, PPL, passkey, relation KL");
  diagnose_options_add(sub, *a);
  sub->callback([a] {
    if (a->options.scalings.empty()) usage_error("--scalings: give at least one scaling");
    diagnose_command_run(*a);
  });
}

}  // namespace linear_ard::cli

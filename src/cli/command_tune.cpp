// `linear-ard tune CONFIG.yaml [key=value ...] --grid KEY=V1,V2 ... [--budget TOKENS]`: the recipe search (docs/tune.md).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "linear_ard/train/tune.h"  // defines: tune_run, tune_grid_parse, tune_budget_parse
#include "plot_run.h"               // defines: plot_run

namespace linear_ard::cli {

void command_tune_register(CLI::App& app) {
  auto options = std::make_shared<train::TuneOptions>();
  auto grid = std::make_shared<std::vector<std::string>>();
  auto no_final = std::make_shared<bool>(false);
  auto budget = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "tune", "Short restore trials over a grid of settings (objective, trainable set, learning rate, ...), each on a "
              "fraction of the full run's steps (the config's, or those of --budget) and scored on the run's validation "
              "split (KL to native, with the config's retrieval rule), then the winner's full run; writes "
              "OUTPUT/tune.md, tune.json, tune.png");
  sub->add_option("CONFIG", options->config_path, "YAML restore config (the full run's)")->required()->check(CLI::ExistingFile);
  sub->add_option("overrides", options->overrides, "key=value overrides for every trial and the final run");
  sub->add_option("--grid", *grid, "KEY=V1,V2,... one axis of the grid, repeatable (e.g. --grid lr,stage2.lr=1e-3,3e-3 "
                                   "--grid trainable=qkv,lora_qkv; keys joined by commas take the same value)")
      ->required()
      ->expected(1)
      ->take_all();
  sub->add_option("--trial-fraction", options->trial_fraction, "each trial's share of the full run's steps (0..1]")
      ->capture_default_str();
  CLI::Option* budget_option = sub->add_option(
      "--budget", *budget, "TOKENS the full run trains (e.g. 4.26M, 500K, 2G): every stage's steps, warm-up and "
                           "eval_every scaled alike to it, the trials then on --trial-fraction of those (default: the "
                           "config's steps)");
  sub->add_flag("--no-final", *no_final, "stop after choosing the winner (no full run)");
  sub->callback([options, grid, no_final, budget, budget_option] {
    options->grid = train::tune_grid_parse(*grid);
    if (budget_option->count() > 0) options->budget = train::tune_budget_parse(*budget);
    options->final_run = !*no_final;
    options->restore = restore_with_followers;
    const nlohmann::json t = train::tune_run(*options);
    const std::filesystem::path out(t["output"].get<std::string>());
    plot_run({"tune", (out / "tune.json").string(), "-o", (out / "tune").string()}, false);
  });
}

}  // namespace linear_ard::cli

// run_result: the trained HF folder, the PEFT adapters and training_summary.json.
#include "run_result.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "linear_ard/io/hf_folder.h"       // defines: hf_folder_save
#include "linear_ard/io/json_file.h"       // defines: json_file_write, json_file_read
#include "linear_ard/train/metrics_log.h"  // defines: memory_peak_bytes

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The folder is this run's (locked and marked; a fresh run's was emptied of what runs write): a
// model/ or scaled/ already there is the final write of an attempt of this run killed after it,
// which a resumed run replaces whole (the folder swap), as it does adapters/.
io::HfFolderSaveOptions final_save() {
  io::HfFolderSaveOptions options;
  options.overwrite = true;
  return options;
}

// The LoRA adapters alone in PEFT's format, written beside and renamed: whole or not at all.
void adapters_write(const RunPlan& plan, const RunModel& model) {
  const fs::path out(plan.config.output);
  // PEFT builds the adapters' base from base_model_name_or_path: it must carry the student's RoPE,
  // so scaled/ (the teacher's weights under the student's config) is written and named.
  io::HfFolder scaled = plan.teacher;
  scaled.path.clear();
  scaled.model_config = plan.student_config;
  io::hf_folder_save((out / "scaled").string(), scaled, final_save());
  // Written beside, then renamed: the adapters folder appears whole or not at all.
  const fs::path adapters = out / "adapters", tmp = out / "adapters.tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  model.trainables->adapters_save(tmp.string(), fs::absolute(out / "scaled").lexically_normal().string());
  fs::remove_all(adapters);
  fs::rename(tmp, adapters);
}

// Per stage: the tokens it trained on, how many of them were distinct positions of its data, the
// passes over the data it completed, its files.
json stages_summary(const Run& run) {
  const RestoreConfig& c = run.plan.config;
  json stages = json::array();
  for (const StageSpec& stage : run.stages) {
    const std::vector<io::TextSource>& files = stage.stage == 2 && !c.stage2.data.empty() ? c.stage2.data : c.data;
    json paths = json::array();
    for (const auto& f : files) paths.push_back(f.path);
    stages.push_back({{"stage", stage.stage},
                      {"tokens_consumed", stage.blocks->tokens()},
                      {"distinct_tokens", stage.blocks->distinct_tokens()},
                      {"passes_completed", stage.blocks->passes()},
                      {"data", paths}});
  }
  return stages;
}

json summary_make(const Run& run, const std::string& model_dir) {
  const RunPlan& plan = run.plan;
  const RestoreConfig& c = plan.config;
  const RunProgress& progress = run.progress;
  const TrainableSet& trainables = *run.model.trainables;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
  json summary = {{"token_budget", token_budget(run.stages, plan.world)},
      {"tokens_trained", progress.tokens},
      {"held_out_tokens", run.model.eval_ids.numel()},
      {"data_passes_completed", plan.stream->passes()},
      {"stages", stages_summary(run)},
      {"validation", run.selection.summary()},
      {"steps", plan.total_steps()},
      {"method", enum_name(c.method)},
      {"seed", c.seed},
      {"deterministic", c.deterministic},
      {"layers", plan.layers},
      {"train_time_s", progress.train_s},
      {"wall_time_s", wall_s},
      {"mean_tokens_per_s", static_cast<double>(progress.tokens) / progress.train_s},
      {"peak_memory_bytes", memory_peak_bytes(plan.device)},
      {"device", enum_name(c.device)},
      {"dtype", enum_name(c.dtype)},
      {"trainable", enum_name(c.trainable)},
      {"trainable_parameters", trainables.parameter_count()},
      {"trainable_tensors", trainables.names()},
      {"teacher", c.teacher},
      {"teacher_max_position_embeddings", plan.native()},
      {"student_rope", c.student_rope},
      {"student_max_position_embeddings", plan.extended()},
      {"eval_before", progress.eval_before},
      {"eval_after", progress.eval_after},
      {"model", model_dir}};
  if (!run.diverged.is_null()) summary["diverged"] = run.diverged;
  return summary;
}

// Whether an attempt of this run killed after its last write left the model the selection chooses:
// the weight files go only after model/ and training_summary.json (which names the chosen step) are
// written, so a chosen step without its file and a summary naming that step mean nothing is left to do.
bool written_before(const Run& run, const fs::path& out) {
  const std::optional<size_t> chosen = run.selection.chosen();
  const fs::path summary = out / "training_summary.json";
  if (!chosen || run.selection.chosen_kept() || !fs::exists(summary) || !fs::is_directory(out / "model")) return false;
  const json written = io::json_file_read(summary.string());
  return written.is_object() && written.contains("validation") &&
         written["validation"].value("chosen_step", json()) == run.selection.records()[*chosen].at("step");
}

}  // namespace

void run_result_write(Run& run) {
  const RunPlan& plan = run.plan;
  const fs::path out(plan.config.output);
  if (written_before(run, out)) {
    std::printf("%s: model/ and training_summary.json were written before the run stopped; nothing left to do\n",
                plan.name.c_str());
    return;
  }
  run.selection.chosen_load(*run.model.trainables);
  // The trained folder: the checkpoint's tensors with the trained ones (LoRA merged) in its dtype,
  // the student's RoPE in config.json, the teacher's tokenizer and generation config.
  io::HfFolder trained = plan.teacher;
  trained.path.clear();
  trained.model_config = plan.student_config;
  trained.weights = run.model.trainables->merged(plan.teacher.weights);
  const std::string model_dir = (out / "model").string();
  io::hf_folder_save(model_dir, trained, final_save());
  if (plan.config.save_adapters) adapters_write(plan, run.model);
  io::json_file_write((out / "training_summary.json").string(), summary_make(run, model_dir));
  run.selection.files_remove();
  const RunProgress& progress = run.progress;
  if (const std::optional<size_t> chosen = run.selection.chosen())
    std::printf("%s: model of step %ld: %s\n", plan.name.c_str(),
                static_cast<long>(run.selection.records()[*chosen].at("step").get<int64_t>()),
                run.selection.summary().at("why").get<std::string>().c_str());
  std::printf("%s: %ld tokens in %.1f s (%.0f tok/s); model written to %s\n", plan.name.c_str(),
              static_cast<long>(progress.tokens), progress.train_s, static_cast<double>(progress.tokens) / progress.train_s,
              model_dir.c_str());
}

}  // namespace linear_ard::train

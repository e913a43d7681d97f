// run_result: the trained HF folder, the PEFT adapters and training_summary.json.
#include "run_result.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "linear_ard/io/hf_folder.h"       // defines: hf_folder_save
#include "linear_ard/io/json_file.h"       // defines: json_file_write
#include "linear_ard/train/metrics_log.h"  // defines: memory_peak_bytes

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The LoRA adapters alone in PEFT's format, written beside and renamed: whole or not at all.
void adapters_write(const RunPlan& plan, const RunModel& model) {
  const fs::path out(plan.config.output);
  // PEFT builds the adapters' base from base_model_name_or_path: it must carry the student's RoPE,
  // so scaled/ (the teacher's weights under the student's config) is written and named.
  io::HfFolder scaled = plan.teacher;
  scaled.path.clear();
  scaled.model_config = plan.student_config;
  io::hf_folder_save((out / "scaled").string(), scaled);
  // Written beside, then renamed: the adapters folder appears whole or not at all.
  const fs::path adapters = out / "adapters", tmp = out / "adapters.tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  model.trainables->adapters_save(tmp.string(), fs::absolute(out / "scaled").lexically_normal().string());
  fs::remove_all(adapters);
  fs::rename(tmp, adapters);
}

json summary_make(const Run& run, const std::string& model_dir) {
  const RunPlan& plan = run.plan;
  const RestoreConfig& c = plan.config;
  const RunProgress& progress = run.progress;
  const TrainableSet& trainables = *run.model.trainables;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
  return {{"token_budget", token_budget(run.stages, plan.world)},
          {"tokens_trained", progress.tokens},
          {"held_out_tokens", run.model.eval_ids.numel()},
          {"data_passes_completed", plan.blocks1->passes()},
          {"steps", plan.total_steps()},
          {"method", enum_name(c.method)},
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
}

}  // namespace

void run_result_write(const Run& run) {
  const RunPlan& plan = run.plan;
  const fs::path out(plan.config.output);
  // The trained folder: the checkpoint's tensors with the trained ones (LoRA merged) in its dtype,
  // the student's RoPE in config.json, the teacher's tokenizer and generation config.
  io::HfFolder trained = plan.teacher;
  trained.path.clear();
  trained.model_config = plan.student_config;
  trained.weights = run.model.trainables->merged(plan.teacher.weights);
  const std::string model_dir = (out / "model").string();
  io::hf_folder_save(model_dir, trained);
  if (plan.config.save_adapters) adapters_write(plan, run.model);
  io::json_file_write((out / "training_summary.json").string(), summary_make(run, model_dir));
  const RunProgress& progress = run.progress;
  std::printf("%s: %ld tokens in %.1f s (%.0f tok/s); model written to %s\n", plan.name.c_str(),
              static_cast<long>(progress.tokens), progress.train_s, static_cast<double>(progress.tokens) / progress.train_s,
              model_dir.c_str());
}

}  // namespace linear_ard::train

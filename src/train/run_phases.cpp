// run_phases: plan, resume, outputs, model, stage loops and final outputs of a training run
// (paper Sec. 3.2-3.4, Appendix B); the restore and pretrain drivers call them in order.
#include "run_phases.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"       // defines: file_write_atomic
#include "linear_ard/io/json_file.h"         // defines: json_file_write
#include "linear_ard/model/device_choice.h"  // defines: device_choice_resolve
#include "linear_ard/model/weights_place.h"  // defines: weights_place
#include "linear_ard/train/fused_adamw.h"    // defines: FusedAdamW
#include "linear_ard/train/lr_schedule.h"    // defines: lr_schedule_at
#include "linear_ard/train/step_profile.h"   // defines: StepProfile
#include "output_folder.h"                   // defines: OutputLock, output_prepare, output_stale_remove

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void length_error(const std::string& key, int64_t value, const std::string& what) {
  throw std::invalid_argument("config key '" + key + "' (" + std::to_string(value) + ") " + what);
}

// ctx_len (0: the native length) within the range the method trains in; stage 2's within the
// student's; LongReD's skipped positions within the student's.
void lengths_check(RunPlan& plan) {
  RestoreConfig& c = plan.config;
  const int64_t native = plan.native(), extended = plan.extended();
  if (c.ctx_len == 0) c.ctx_len = native;
  // One token has no next token to predict and no other key to relate to: every loss would be 0.
  if (c.ctx_len < 2) length_error("ctx_len", c.ctx_len, "leaves nothing to train: a block needs at least 2 tokens");
  if (c.method == Method::kCpt) {
    if (c.ctx_len > extended)
      length_error("ctx_len", c.ctx_len, "exceeds the student's max_position_embeddings (" + std::to_string(extended) + ")");
  } else if (c.ctx_len > native) {
    length_error("ctx_len", c.ctx_len, "exceeds the teacher's native max_position_embeddings (" + std::to_string(native) +
                                           "): distillation runs within the teacher's native range");
  }
  if (c.method == Method::kLongred && (c.ctx_len - 1) * c.longred_max_skip >= extended)
    length_error("longred.max_skip", c.longred_max_skip,
                 "sends position (ctx_len - 1) * max_skip past the student's max_position_embeddings (" +
                     std::to_string(extended) + ")");
  if (c.stage2.steps > 0) {
    if (c.stage2.ctx_len == 0) c.stage2.ctx_len = extended;
    if (c.stage2.ctx_len < 2)
      length_error("stage2.ctx_len", c.stage2.ctx_len, "leaves nothing to train: a block needs at least 2 tokens");
    if (c.stage2.ctx_len > extended)
      length_error("stage2.ctx_len", c.stage2.ctx_len,
                   "exceeds the student's max_position_embeddings (" + std::to_string(extended) + ")");
  }
}

// The blocks of each stage (the tokenizer was checked against the model's vocabulary on loading). Stage 2 holds out as
// many of its blocks as cover the held-out evaluation block.
void data_open(RunPlan& plan) {
  const RestoreConfig& c = plan.config;
  const int64_t vocab_size = plan.teacher.model_config.vocab_size;
  // Read through once now, so that a malformed line anywhere fails before the output folder exists.
  TextBlocks::files_check(c.data);
  plan.blocks1.emplace(c.data, *plan.tokenizer, c.ctx_len, /*held_out=*/1, vocab_size);
  if (c.stage2.steps > 0)
    plan.blocks2.emplace(c.data, *plan.tokenizer, c.stage2.ctx_len, (c.ctx_len + c.stage2.ctx_len - 1) / c.stage2.ctx_len,
                         vocab_size);
  if (plan.dist) {
    plan.blocks1->shard(plan.dist->rank(), plan.world);
    if (plan.blocks2) plan.blocks2->shard(plan.dist->rank(), plan.world);
  }
  plan.blocks1->shuffle(c.data_shuffle, c.seed);
  if (plan.blocks2) plan.blocks2->shuffle(c.data_shuffle, c.seed + 1);
}

void warn(const RunPlan& plan, const std::string& what) {
  if (plan.main_rank) std::fprintf(stderr, "linear-ard: warning: %s\n", what.c_str());
}

// Legal but suspicious settings: a context too short to hold the relations RoPE scaling changes,
// a warmup the stage never finishes.
void warnings_print(const RunPlan& plan) {
  constexpr int64_t kSmallContext = 16;
  const RestoreConfig& c = plan.config;
  const auto context = [&](const char* key, int64_t n) {
    if (n < kSmallContext)
      warn(plan, std::string("config key '") + key + "' (" + std::to_string(n) + ") is small: each row relates to at most " +
                     std::to_string(n) + " keys, far from the long-range relations RoPE scaling changes");
  };
  const auto warmup = [&](const char* key, int64_t w, const char* steps_key, int64_t steps) {
    if (w > steps)
      warn(plan, std::string("config key '") + key + "' (" + std::to_string(w) + ") exceeds " + steps_key + " (" +
                     std::to_string(steps) + "): the learning rate never reaches its peak");
  };
  context("ctx_len", c.ctx_len);
  warmup("warmup_steps", c.warmup_steps, "steps", c.steps);
  if (c.stage2.steps > 0) {
    context("stage2.ctx_len", c.stage2.ctx_len);
    warmup("stage2.warmup_steps", c.stage2.warmup_steps, "stage2.steps", c.stage2.steps);
  }
}

// The shared frozen weights on the device in the model dtype (plan.teacher.weights keeps the
// checkpoint's dtype for saving), checked to fit and finite: a NaN/Inf weight would train into NaN
// or be written into the model unnoticed.
void weights_place(RunPlan& plan) {
  const std::string owner = plan.teacher.path.empty() ? std::string("the initial model") : "teacher " + plan.teacher.path;
  plan.model_tensors = model::weights_place(plan.teacher.weights, plan.device, plan.dtype, owner, "train on");
}

// The output folder locked by rank 0 (created when missing); every rank learns whether it was.
void output_lock(RunPlan& plan) {
  const auto lock = [&] {
    if (plan.main_rank) plan.lock = std::make_unique<OutputLock>(plan.config.output);
  };
  if (plan.dist) plan.dist->run_agreed("locking the output folder", lock);
  else lock();
}

// metrics.jsonl records of a previous run up to `step` (a resumed run continues after them).
std::vector<json> metrics_read(const std::string& path, int64_t step) {
  std::vector<json> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) break;  // a line cut short by the interruption
    if (r.value("step", int64_t{0}) <= step) records.push_back(std::move(r));
  }
  return records;
}

// A host tensor on `device`; to a GPU from pinned memory without a stream synchronisation, so the
// host can queue the step's kernels while the previous step's still run (pageable copies wait).
torch::Tensor host_to_device(const torch::Tensor& host, const torch::Device& device) {
  if (!device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

torch::Tensor ids_tensor(const std::vector<std::vector<int32_t>>& blocks, const torch::Device& device) {
  const auto n = static_cast<int64_t>(blocks.front().size());
  auto ids = torch::empty({static_cast<int64_t>(blocks.size()), n}, torch::kLong);
  auto* p = ids.data_ptr<int64_t>();
  for (const auto& b : blocks)
    for (int32_t id : b) *p++ = id;
  return host_to_device(ids, device);
}

// The LM-loss weights [B, n] of a micro-batch (1 for blocks without weights); undefined when no
// block has any, so that objective_lm takes its plain mean.
torch::Tensor weights_tensor(const std::vector<MixedBlock>& blocks, const torch::Device& device) {
  if (std::all_of(blocks.begin(), blocks.end(), [](const MixedBlock& b) { return b.weights.empty(); })) return {};
  const auto n = static_cast<int64_t>(blocks.front().ids.size());
  auto weights = torch::ones({static_cast<int64_t>(blocks.size()), n}, torch::kFloat);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (!blocks[b].weights.empty())
      weights[static_cast<int64_t>(b)].copy_(torch::tensor(blocks[b].weights));
  return host_to_device(weights, device);
}

// The micro-batch source of one step: the stage's next blocks (mixed), their LM-loss weights left
// in model.batch_weights. `drawn` is the stage's block index (block_mix).
std::function<torch::Tensor()> batch_source(const RunPlan& plan, RunModel& model, const StageSpec& stage,
                                            int64_t& drawn) {
  return [&plan, &model, &stage, &drawn] {
    std::vector<MixedBlock> mixed;
    for (int64_t b = 0; b < stage.batch_size; ++b)
      mixed.push_back(block_mix(stage.blocks->next(), drawn++, stage.mix, *plan.tokenizer));
    model.batch_weights = weights_tensor(mixed, plan.device);
    std::vector<std::vector<int32_t>> batch;
    for (MixedBlock& m : mixed) batch.push_back(std::move(m.ids));
    return ids_tensor(batch, plan.device);
  };
}

// One step's metrics line.
json step_record(const RunPlan& plan, const StageSpec& stage, int64_t global, const StepResult& result, double lr,
                 int64_t tokens, int64_t tokens_per_step, double step_s) {
  json record = {{"step", global}, {"stage", stage.stage}, {"loss", result.loss}};
  for (const auto& [k, v] : result.parts) record[k] = v;
  record.update({{"lr", lr},
                 {"grad_norm", result.grad_norm},
                 {"tokens", tokens},
                 {"tokens_per_s", static_cast<double>(tokens_per_step) / step_s},
                 {"step_time_s", step_s},
                 {"peak_memory_bytes", memory_peak_bytes(plan.device)}});
  return record;
}

// The divergence rule on one step's loss against its stage's first loss; why it diverged, if it did.
std::optional<std::string> loss_diverged(const RestoreConfig& c, double loss, double reference) {
  if (c.divergence_factor <= 0 || loss <= c.divergence_factor * std::max(reference, 1e-6)) return std::nullopt;
  char text[256];
  std::snprintf(text, sizeof text,
                "loss %g is above divergence_factor (%g) x the stage's first loss %g (try a lower lr; "
                "divergence_factor=0 turns this check off)",
                loss, c.divergence_factor, reference);
  return std::string(text);
}

// The first non-finite number of an evaluation record ("relation_loss nan"), if any.
std::optional<std::string> eval_nonfinite(const json& record) {
  for (const auto& [k, v] : record.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) return k + " " + std::to_string(v.get<double>());
  return std::nullopt;
}

json token_budget(const std::vector<StageSpec>& stages, int64_t world) {
  json per_stage = json::array();
  int64_t budget = 0;
  for (const StageSpec& stage : stages) {
    const int64_t n = stage.ctx_len * stage.batch_size * stage.grad_accum * stage.steps * world;
    budget += n;
    per_stage.push_back({{"stage", stage.stage}, {"L", stage.ctx_len}, {"B", stage.batch_size},
                         {"A", stage.grad_accum}, {"U", stage.steps}, {"G", world}, {"tokens", n}});
  }
  return {{"formula", "N_tok = sum_s L_s * B_s * A_s * U_s * G"}, {"stages", per_stage}, {"tokens", budget}};
}

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

}  // namespace

RunPlan run_plan_begin(const RestoreConfig& config, const std::string& name) {
  RunPlan plan;
  plan.config = config;
  plan.name = name;
  RestoreConfig& c = plan.config;
  const model::DeviceChoice choice =
      model::device_choice_resolve(enum_name(c.device), enum_name(c.dtype), "config key 'device'", "config key 'dtype'");
  c.device = *enum_from_name<RunDevice>(choice.device_name);
  c.dtype = *enum_from_name<RunDtype>(choice.dtype_name);
  // Under torchrun (WORLD_SIZE > 1) this process is one rank of a data-parallel run: it reads its
  // shard of the blocks, gradients are averaged over the ranks, rank 0 alone writes (docs/multi-gpu.md).
  plan.dist = dist::Distributed::from_env(choice.device);
  plan.main_rank = !plan.dist || plan.dist->is_main();
  plan.world = plan.dist ? plan.dist->world_size() : 1;
  plan.device = plan.dist ? plan.dist->device() : choice.device;
  plan.dtype = choice.dtype;
  return plan;
}

void run_plan_finish(RunPlan& plan) {
  if (plan.mix.fraction > 0 && !plan.mix.make)
    throw std::invalid_argument("config key 'pretrain.passkey_fraction': this command has no passkey sample maker (use linear-ard pretrain)");
  lengths_check(plan);
  const RestoreConfig& c = plan.config;
  const int64_t num_layers = plan.teacher.model_config.num_hidden_layers;
  plan.layers = restore_layers_resolve(c.layers, num_layers);
  // Only the layers up to the last distilled one can move its Q/K/V; every other objective reads
  // the whole model.
  const bool whole_model = c.method != Method::kArd || c.objective.logit_kl > 0 || c.stage2.steps > 0;
  plan.last_trainable_layer = whole_model ? num_layers - 1 : plan.layers.back();
  data_open(plan);
  weights_place(plan);
  warnings_print(plan);
  output_lock(plan);
}

std::string run_resume_key(const RestoreConfig& config) {
  RestoreConfig r = config;
  r.resume = false, r.stop_after_step = 0, r.profile_steps = 0, r.overwrite = false, r.divergence_factor = RestoreConfig{}.divergence_factor;
  return restore_config_to_yaml(r);
}

ResumePoint run_resume_find(const RunPlan& plan) {
  const RestoreConfig& c = plan.config;
  ResumePoint resume;
  if (c.resume && plan.main_rank) resume.checkpoint = checkpoint_latest(c.output);
  if (plan.dist && c.resume) {
    const std::string chosen = plan.dist->broadcast_string(resume.checkpoint.value_or(""));
    if (!chosen.empty()) resume.checkpoint = chosen;
  }
  if (!resume.checkpoint) return resume;
  const std::string& checkpoint = *resume.checkpoint;
  resume.state = checkpoint_state_read(checkpoint);
  if (resume.state->config_yaml != run_resume_key(c))
    throw std::invalid_argument("config key 'resume': checkpoint " + checkpoint +
                                " was written by a run with another config (only resume, stop_after_step, profile_steps, "
                                "overwrite and divergence_factor may differ)");
  if (resume.state->world_size != plan.world)
    throw std::invalid_argument("config key 'resume': checkpoint " + checkpoint + " was written by a run of " +
                                std::to_string(resume.state->world_size) + " process(es) and this run has " +
                                std::to_string(plan.world) + " (WORLD_SIZE): the data shards and the global batch "
                                "depend on it; resume with the same number");
  resume.records = metrics_read((fs::path(c.output) / "metrics.jsonl").string(), resume.state->step);
  return resume;
}

RunOutputs::RunOutputs(const RunPlan& plan, const ResumePoint& resume) {
  const auto open = [&] {
    if (!plan.main_rank) return;
    const fs::path out(plan.config.output);
    if (!resume.checkpoint) output_prepare(plan.config);
    else output_stale_remove(plan.config.output);
    io::file_write_atomic((out / "resolved_config.yaml").string(), restore_config_to_yaml(plan.config));
    metrics_.emplace((out / "metrics.jsonl").string());
    for (const auto& r : resume.records) metrics_->append(r);
  };
  if (plan.dist) plan.dist->run_agreed("preparing the output folder", open);
  else open();
}

void RunOutputs::append(const json& record) {
  if (metrics_) metrics_->append(record);
}

RunModel::RunModel(RunPlan& plan)
    : weights([&] {
        torch::manual_seed(plan.config.seed);
        return model::llama_weights_from_map(plan.teacher.model_config, std::move(plan.model_tensors));
      }()),
      teacher_rope(model::rope_tables_init(plan.teacher.model_config)),
      student_rope(model::rope_tables_init(plan.student_config)) {
  const RestoreConfig& c = plan.config;
  trainables = std::make_unique<TrainableSet>(c.trainable, c.lora, plan.teacher.weights, weights,
                                              plan.last_trainable_layer, plan.device);
  if (plan.dist) gradients.emplace(*plan.dist, trainables->parameters());
  ctx = objective_context_make(c, weights, teacher_rope, student_rope, plan.layers);
  eval_ids = ids_tensor(plan.blocks1->held_out(), plan.device);
}

std::vector<StageSpec> run_stages_build(RunPlan& plan, RunModel& model, StageLoss stage1_loss) {
  const RestoreConfig& c = plan.config;
  std::vector<StageSpec> stages;
  stages.push_back({1, c.ctx_len, c.batch_size, c.grad_accum, c.steps, c.warmup_steps, c.lr, c.min_lr_ratio,
                    std::move(stage1_loss), &*plan.blocks1, plan.mix});
  if (c.stage2.steps > 0) {
    const Stage2Config& s = c.stage2;
    stages.push_back({2, s.ctx_len, s.batch_size, s.grad_accum, s.steps, s.warmup_steps, s.lr, s.min_lr_ratio,
                      [&model](const model::Overrides& o, const torch::Tensor& ids) { return objective_lm(model.ctx, o, ids); },
                      &*plan.blocks2, BlockMix{}});
  }
  return stages;
}

RunProgress run_progress_start(const ResumePoint& resume, const RunEvaluate& evaluate) {
  RunProgress progress;
  if (resume.state) {
    progress.tokens = resume.state->tokens;
    progress.train_s = resume.state->train_s;
  }
  for (const auto& r : resume.records) {
    if (!r.value("eval", false)) continue;
    if (r.at("step").get<int64_t>() == 0) progress.eval_before = r;
    progress.eval_after = r;  // the last one before the checkpoint (a run stopped at its end has its final one)
  }
  if (!resume.state) {
    progress.eval_before = evaluate(0);
    if (const auto bad = eval_nonfinite(progress.eval_before))
      throw std::runtime_error("the held-out evaluation before training gives " + *bad + ": the model computes NaN/Inf");
    progress.eval_after = progress.eval_before;
  }
  return progress;
}

namespace {

// The checkpoints of a run, each counted good once a later loss or held-out evaluation computed
// from its weights passed the divergence rule; until then the previous good one stays on disk.
class CheckpointKeeper {
 public:
  CheckpointKeeper(const RunPlan& plan, const ResumePoint& resume) : output_(plan.config.output), active_(plan.main_rank) {
    if (resume.state) unchecked_ = resume.state->step;
  }
  void saved(int64_t step, bool checked) {
    unchecked_ = step;
    if (checked) passed();
  }
  // The unchecked checkpoint is good: the older ones go.
  void passed() {
    if (active_ && unchecked_) checkpoint_prune(output_, *unchecked_);
    unchecked_.reset();
  }
  // Removes the unchecked checkpoint (its weights led to the divergence); the end of the message
  // saying what is left.
  std::string diverged() {
    if (active_ && unchecked_) checkpoint_remove(output_, *unchecked_);
    const std::optional<std::string> kept = active_ ? checkpoint_latest(output_) : std::nullopt;
    return std::string("; the run diverged: no model is written") +
           (kept ? "; " + fs::path(*kept).filename().string() + ", the last good checkpoint, is kept (resume=true continues from it)"
                 : "");
  }

 private:
  std::string output_;
  bool active_;
  std::optional<int64_t> unchecked_;
};

// What a profile of `stage`'s steps shows, for its summary's title.
std::string profile_title(const RunPlan& plan, const StageSpec& stage) {
  const RestoreConfig& c = plan.config;
  const std::string objective = stage.stage == 2 ? "cpt (stage 2)" : enum_name(c.method);
  return plan.name + " stage " + std::to_string(stage.stage) + ", " + objective + ", trainable " +
         enum_name(c.trainable) + ", ctx " + std::to_string(stage.ctx_len) + " x batch " +
         std::to_string(stage.batch_size) + " x accum " + std::to_string(stage.grad_accum) + ", " +
         enum_name(c.device) + " " + enum_name(c.dtype);
}

// The first step loss of `stage` in a resumed run's records (the divergence rule's reference).
std::optional<double> stage_first_loss(const ResumePoint& resume, int64_t stage) {
  for (const auto& r : resume.records)
    if (!r.value("eval", false) && r.value("stage", int64_t{1}) == stage) return r.at("loss").get<double>();
  return std::nullopt;
}

// A stage's first step: after the resumed checkpoint's (its trainables, optimizer, generators and
// data position restored) when the run resumes inside this stage, else 1.
int64_t stage_resume(const RunPlan& plan, const ResumePoint& resume, const StageSpec& stage, TrainableSet& trainables,
                     torch::optim::AdamW& optimizer) {
  if (!resume.state || resume.state->stage != stage.stage) return 1;
  checkpoint_restore(*resume.checkpoint, trainables, optimizer);
  for (int64_t i = 0; i < resume.state->blocks_consumed; ++i) stage.blocks->next();
  std::printf("%s: resumed from %s (step %ld)\n", plan.name.c_str(), resume.checkpoint->c_str(),
              static_cast<long>(resume.state->step));
  return resume.state->stage_step + 1;
}

// Runs `stage`'s loop; false when stop_after_step ended the run (its checkpoint written).
bool run_stage(const RunPlan& plan, RunModel& model, RunOutputs& outputs, const ResumePoint& resume,
               const StageSpec& stage, int64_t step_offset, const RunEvaluate& evaluate, RunProgress& progress,
               CheckpointKeeper& keeper, StepProfile* profile) {
  const RestoreConfig& c = plan.config;
  TrainableSet& trainables = *model.trainables;
  FusedAdamW optimizer(trainables.parameters(), torch::optim::AdamWOptions(stage.lr).weight_decay(c.weight_decay));
  const int64_t first = stage_resume(plan, resume, stage, trainables, optimizer);
  std::optional<double> reference = stage_first_loss(resume, stage.stage);
  const LrSchedule schedule{stage.lr, stage.warmup_steps, stage.steps, stage.min_lr_ratio};
  const int64_t tokens_per_step = stage.ctx_len * stage.batch_size * stage.grad_accum * plan.world;
  const int64_t total_steps = plan.total_steps();
  for (int64_t step = first; step <= stage.steps; ++step) {
    const int64_t global = step_offset + step;
    const auto t0 = Clock::now();
    const double lr = lr_schedule_at(schedule, step - 1);
    int64_t drawn = (step - 1) * stage.batch_size * stage.grad_accum;
    StepResult result;
    if (profile) profile->step_begin(global);
    try {
      result = restore_step(stage.loss, trainables, optimizer, batch_source(plan, model, stage, drawn),
                            {stage.grad_accum, lr, c.clip_grad_norm, plan.dtype, global, model.gradients ? &*model.gradients : nullptr});
    } catch (const StepDiverged& e) {
      throw std::runtime_error(e.what() + keeper.diverged());
    }
    if (profile) profile->step_end(global, tokens_per_step, profile_title(plan, stage));
    const double step_s = seconds_since(t0);
    progress.train_s += step_s;
    progress.tokens += tokens_per_step;
    outputs.append(step_record(plan, stage, global, result, lr, progress.tokens, tokens_per_step, step_s));
    if (!reference) reference = result.loss;
    if (const auto why = loss_diverged(c, result.loss, *reference))
      throw std::runtime_error("step " + std::to_string(global) + ": " + *why + keeper.diverged());
    keeper.passed();
    if (global % c.log_every == 0 || global == total_steps) {
      const double eta = progress.train_s / static_cast<double>(global) * static_cast<double>(total_steps - global);
      progress_print(global, total_steps, result.loss, lr, static_cast<double>(tokens_per_step) / step_s, eta);
    }
    const bool evaluated = step == stage.steps || (c.eval_every > 0 && global % c.eval_every == 0);
    if (evaluated) {
      progress.eval_after = evaluate(global);
      if (const auto bad = eval_nonfinite(progress.eval_after))
        throw std::runtime_error("step " + std::to_string(global) + ": the held-out evaluation gives " + *bad + keeper.diverged());
    }
    const bool stop = global == c.stop_after_step;
    // Every rank holds the same trainables, optimizer and generator state; rank 0 writes them.
    if (plan.main_rank && (stop || (c.checkpoint_every > 0 && global % c.checkpoint_every == 0))) {
      checkpoint_save(c.output,
                      {global, stage.stage, step, step * stage.batch_size * stage.grad_accum, progress.tokens,
                       progress.train_s, plan.world, run_resume_key(c)},
                      trainables, optimizer);
      keeper.saved(global, evaluated);
    }
    if (stop) {
      progress_break();
      std::printf("%s: stopped after step %ld (stop_after_step); resume=true continues from %s\n", plan.name.c_str(),
                  static_cast<long>(global), (fs::path(c.output) / ("checkpoint-" + std::to_string(global))).c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

bool run_stages(const RunPlan& plan, RunModel& model, RunOutputs& outputs, const ResumePoint& resume,
                const std::vector<StageSpec>& stages, const RunEvaluate& evaluate, RunProgress& progress) {
  CheckpointKeeper keeper(plan, resume);
  std::optional<StepProfile> profile;
  const RestoreConfig& c = plan.config;
  if (c.profile_steps > 0 && plan.main_rank) {
    // Step 1 warms up (allocator, kernels' first launches) unless it is the only one.
    const int64_t first = std::min<int64_t>(2, plan.total_steps());
    profile.emplace((fs::path(c.output) / "profile").string(), first,
                    std::min(c.profile_steps, plan.total_steps() - first + 1), plan.device);
  }
  int64_t step_offset = 0;
  for (const StageSpec& stage : stages) {
    const bool finished_before = resume.state && resume.state->stage > stage.stage;
    if (!finished_before && !run_stage(plan, model, outputs, resume, stage, step_offset, evaluate, progress, keeper,
                                       profile ? &*profile : nullptr))
      return false;
    step_offset += stage.steps;
  }
  return true;
}

void run_outputs_write(const RunPlan& plan, const RunModel& model, const std::vector<StageSpec>& stages,
                              const RunProgress& progress, std::chrono::steady_clock::time_point run_start) {
  const RestoreConfig& c = plan.config;
  const fs::path out(c.output);
  // The trained folder: the checkpoint's tensors with the trained ones (LoRA merged) in its dtype,
  // the student's RoPE in config.json, the teacher's tokenizer and generation config.
  io::HfFolder trained = plan.teacher;
  trained.path.clear();
  trained.model_config = plan.student_config;
  trained.weights = model.trainables->merged(plan.teacher.weights);
  const std::string model_dir = (out / "model").string();
  io::hf_folder_save(model_dir, trained);
  if (c.save_adapters) adapters_write(plan, model);
  const double wall_s = seconds_since(run_start);
  const TrainableSet& trainables = *model.trainables;
  const json summary = {
      {"token_budget", token_budget(stages, plan.world)},
      {"tokens_trained", progress.tokens},
      {"held_out_tokens", model.eval_ids.numel()},
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
  io::json_file_write((out / "training_summary.json").string(), summary);
  std::printf("%s: %ld tokens in %.1f s (%.0f tok/s); model written to %s\n", plan.name.c_str(),
              static_cast<long>(progress.tokens), progress.train_s, static_cast<double>(progress.tokens) / progress.train_s,
              model_dir.c_str());
}

}  // namespace linear_ard::train

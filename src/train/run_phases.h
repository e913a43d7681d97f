// run_phases: the phases of a training run, shared by the restore and pretrain drivers in the shape
// of torchtune's recipes: plan (model, lengths, data) -> resume -> open the outputs -> build the
// model -> run each stage's loop -> write the outputs. Private to src/train.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "linear_ard/dist/distributed.h"
#include "linear_ard/dist/gradient_buckets.h"
#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/tokenizer.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"
#include "linear_ard/train/block_mix.h"
#include "linear_ard/train/checkpoint.h"
#include "linear_ard/train/metrics_log.h"
#include "linear_ard/train/restore_config.h"
#include "linear_ard/train/restore_objective.h"
#include "linear_ard/train/restore_step.h"
#include "linear_ard/train/text_blocks.h"
#include "linear_ard/train/trainable_set.h"
#include "output_folder.h"

namespace linear_ard::train {

// Phase 1, the plan: everything checkable, checked before the output folder exists; then the
// folder is locked.
struct RunPlan {
  RestoreConfig config;                 // resolved: device, dtype, ctx_len, stage2.ctx_len
  std::string name;                     // "restore" or "pretrain": the log prefix
  std::unique_ptr<linear_ard::dist::Distributed> dist;    // under torchrun (WORLD_SIZE > 1); null: one process
  bool main_rank = true;                // rank 0 alone writes
  int64_t world = 1;                    // the paper's G
  torch::Device device{torch::kCPU};
  torch::ScalarType dtype = torch::kFloat;
  io::HfFolder teacher;                 // the checkpoint the run starts from (pretrain: random)
  model::ModelConfig student_config;    // the trained model's config.json
  std::vector<int64_t> layers;          // distilled layers, resolved
  int64_t last_trainable_layer = 0;
  std::unique_ptr<io::Tokenizer> tokenizer;
  BlockMix mix;                         // passkey samples mixed into stage 1's blocks (pretrain)
  std::optional<TextBlocks> blocks1, blocks2;  // stage 1 (its first block held out), stage 2
  io::TensorMap model_tensors;          // teacher.weights on the device in the model dtype, all finite
  std::unique_ptr<OutputLock> lock;     // rank 0's lock on the output folder

  int64_t native() const { return teacher.model_config.max_position_embeddings; }
  int64_t extended() const { return student_config.max_position_embeddings; }
  int64_t total_steps() const { return config.steps + config.stage2.steps; }
};

// Device, dtype and the process group of `config`: a plan with nothing loaded yet.
RunPlan run_plan_begin(const RestoreConfig& config, const std::string& name);
// With plan.teacher, plan.student_config, plan.tokenizer set: ctx_len against the native and
// extended lengths (at least 2 tokens; a warning on stderr below 16, and for a warmup longer than
// its stage), the distilled and trainable layers, the tokenizer's vocabulary, the data blocks
// (sharded over the ranks), the weights placed and checked finite (an error naming each tensor
// that is not); last, the output folder locked (OutputLock).
void run_plan_finish(RunPlan& plan);

// Phase 2, resume: the checkpoint a resumed run continues from (checked to be this run's) and the
// metrics lines up to it; empty for a fresh run.
struct ResumePoint {
  std::optional<std::string> checkpoint;
  std::optional<CheckpointState> state;
  std::vector<nlohmann::json> records;
};
ResumePoint run_resume_find(const RunPlan& plan);
// The resolved config with the keys about stopping reset: what a checkpoint must match to resume.
std::string run_resume_key(const RestoreConfig& config);

// Phase 3, the outputs: the output folder prepared (fresh runs) or cleared of an interrupted run's
// temporaries (resumed ones), resolved_config.yaml, the metrics log with a resumed run's previous
// lines. Rank 0 only; every rank learns whether it worked.
class RunOutputs {
 public:
  RunOutputs(const RunPlan& plan, const ResumePoint& resume);
  void append(const nlohmann::json& record);

 private:
  std::optional<MetricsLog> metrics_;
};

// Phase 4, the model: the shared frozen weights (plan.model_tensors, moved in), both RoPEs, the
// trainables (after seeding torch with config.seed) and their gradient buckets, the objectives'
// context, the held-out ids. Not movable: ctx points into it.
struct RunModel {
  explicit RunModel(RunPlan& plan);
  RunModel(const RunModel&) = delete;
  RunModel& operator=(const RunModel&) = delete;

  model::LlamaWeights weights;
  model::RopeTables teacher_rope, student_rope;
  std::unique_ptr<TrainableSet> trainables;
  std::optional<dist::GradientBuckets> gradients;
  ObjectiveContext ctx;
  torch::Tensor eval_ids;
  // The LM-loss weights of the micro-batch drawn last (block_mix's; undefined: plain mean):
  // restore_step draws each micro-batch before it calls the loss on it.
  torch::Tensor batch_weights;
};

// Phase 5, the stages: one stage's optimisation settings, loss and data (paper Eq. token_budget:
// L_s, B_s, A_s, U_s).
struct StageSpec {
  int64_t stage = 1;
  int64_t ctx_len = 0, batch_size = 1, grad_accum = 1, steps = 0, warmup_steps = 0;
  double lr = 0, min_lr_ratio = 0;
  StageLoss loss;
  TextBlocks* blocks = nullptr;
  BlockMix mix;  // stage 1 only
};
// Stage 1 from the top-level keys with `loss`, stage 2 (light CPT) when stage2.steps > 0.
std::vector<StageSpec> run_stages_build(RunPlan& plan, RunModel& model, StageLoss stage1_loss);

// A held-out evaluation at a global step: appends its metrics line, prints it, returns it.
using RunEvaluate = std::function<nlohmann::json(int64_t step)>;

// What the stages have done so far (carried over from a resumed checkpoint).
struct RunProgress {
  int64_t tokens = 0;
  double train_s = 0;
  nlohmann::json eval_before, eval_after;
};
// Starts the progress of a fresh or resumed run: evaluates at step 0 for a fresh run, takes the
// previous records' first and last evaluations for a resumed one.
RunProgress run_progress_start(const ResumePoint& resume, const RunEvaluate& evaluate);

// Every stage in order from its first step (or the resumed one), skipping those a resumed checkpoint
// has finished; false when stop_after_step ended the run (its checkpoint written). A diverged run
// (a non-finite loss, gradient norm or held-out evaluation, or a step loss above
// config.divergence_factor x its stage's first loss) throws std::runtime_error saying so, after
// removing the checkpoint that led to it: the last good one stays (a checkpoint counts as good once
// a later loss or evaluation computed from its weights passed), and nothing else is written.
bool run_stages(const RunPlan& plan, RunModel& model, RunOutputs& outputs, const ResumePoint& resume,
                const std::vector<StageSpec>& stages, const RunEvaluate& evaluate, RunProgress& progress);

// Phase 6, the outputs: model/ (the trained tensors merged into the checkpoint, the student's
// config), adapters/ when asked and training_summary.json (the CLI draws the curves: scripts/plot.py); prints the tokens
// trained and where the model went.
void run_outputs_write(const RunPlan& plan, const RunModel& model, const std::vector<StageSpec>& stages,
                              const RunProgress& progress, std::chrono::steady_clock::time_point run_start);

}  // namespace linear_ard::train

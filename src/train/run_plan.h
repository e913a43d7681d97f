// RunPlan: the first phase of a training run (restore or pretrain): everything checkable (device,
// lengths, layers, data, weights) checked before the output folder exists; then the folder is
// locked. Private to src/train.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/dist/distributed.h"
#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/tokenizer.h"
#include "linear_ard/model/model_config.h"
#include "linear_ard/train/block_mix.h"
#include "linear_ard/train/restore_config.h"
#include "linear_ard/train/text_blocks.h"
#include "output_folder.h"  // defines: OutputLock

namespace linear_ard::train {

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

// A `linear-ard: warning:` line on stderr, from rank 0 only.
void run_warn(const RunPlan& plan, const std::string& what);

}  // namespace linear_ard::train

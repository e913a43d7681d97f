// run_plan: the checks and loads of a run's first phase (paper Appendix B's lengths; the data
// blocks; the weights on the device), in the order that leaves no output folder behind on an error.
#include "run_plan.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "linear_ard/model/device_choice.h"  // defines: device_choice_resolve
#include "linear_ard/model/memory_fit.h"     // defines: memory_plan_check
#include "linear_ard/model/weights_place.h"  // defines: weights_place
#include "linear_ard/train/deterministic.h"  // defines: deterministic_set
#include "run_memory.h"                      // defines: run_memory_plan

namespace linear_ard::train {
namespace {

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

// The validation split's length (0: ctx_len within the native range; the native model's next-token
// distributions are its reference, so it stays within that range) and the passkey lengths (empty:
// every stage's target length, the same at every validation so that the validations compare).
void validation_lengths_check(RunPlan& plan) {
  RestoreConfig& c = plan.config;
  const int64_t native = plan.native(), extended = plan.extended();
  if (c.val_ctx_len == 0) c.val_ctx_len = std::min(c.ctx_len, native);
  if (c.val_ctx_len < 2) length_error("val_ctx_len", c.val_ctx_len, "predicts nothing: a block needs at least 2 tokens");
  if (c.val_ctx_len > native)
    length_error("val_ctx_len", c.val_ctx_len, "exceeds the teacher's native max_position_embeddings (" + std::to_string(native) +
                                                   "): the native model's distributions are the validation's reference");
  if (c.pretrain.enabled() || c.val_passkey.samples == 0) return;
  std::vector<int64_t> lengths = c.val_passkey.lengths;
  if (lengths.empty()) {
    lengths.push_back(native);
    if (c.stage2.steps > 0) lengths.push_back(c.stage2.ctx_len);
  }
  for (int64_t n : lengths)
    if (n < 1 || n > extended)
      length_error("val_passkey.lengths", n, "is outside 1..the student's max_position_embeddings (" + std::to_string(extended) + ")");
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  plan.passkey_lengths = lengths;
}

std::string key_value(const char* key, int64_t value) {
  return std::string("config key '") + key + "' (" + std::to_string(value) + ")";
}

// The validation blocks (held out at the start of `data`, or read from val_data) and the streams
// of the stages (the tokenizer was checked against the model's vocabulary on loading).
void streams_open(RunPlan& plan) {
  const RestoreConfig& c = plan.config;
  const int64_t vocab_size = plan.teacher.model_config.vocab_size;
  // Read through once now, so that a malformed line anywhere fails before the output folder exists.
  for (const auto* files : {&c.data, &c.val_data, &c.stage2.data}) TokenStream::files_check(*files);
  plan.stream = std::make_unique<TokenStream>(c.data, *plan.tokenizer, vocab_size, "data");
  const std::string val_what = "config keys 'val_blocks' (" + std::to_string(c.val_blocks) + ") x 'val_ctx_len' (" +
                               std::to_string(c.val_ctx_len) + ")";
  if (c.val_data.empty()) {
    plan.val_blocks = plan.stream->hold_out(c.val_blocks, c.val_ctx_len, val_what);
  } else {
    TokenStream val(c.val_data, *plan.tokenizer, vocab_size, "val_data");
    plan.val_blocks = val.hold_out(c.val_blocks, c.val_ctx_len, val_what);
  }
  plan.stream->block_fits(c.ctx_len, key_value("ctx_len", c.ctx_len));
  if (c.stage2.steps == 0) return;
  if (!c.stage2.data.empty()) plan.stream2 = std::make_unique<TokenStream>(c.stage2.data, *plan.tokenizer, vocab_size, "stage2.data");
  (plan.stream2 ? *plan.stream2 : *plan.stream).block_fits(c.stage2.ctx_len, key_value("stage2.ctx_len", c.stage2.ctx_len));
}

// The blocks of each stage: stage 2's continue stage 1's stream (or read stage2.data), sharded over
// the ranks and shuffled.
void blocks_open(RunPlan& plan) {
  const RestoreConfig& c = plan.config;
  const auto warn = [main = plan.main_rank](const std::string& what) {
    if (main) std::fprintf(stderr, "linear-ard: warning: %s\n", what.c_str());
  };
  plan.blocks1.emplace(*plan.stream, c.ctx_len, c.steps * c.batch_size * c.grad_accum * plan.world, "stage 1", warn);
  if (c.stage2.steps > 0) {
    const Stage2Config& s = c.stage2;
    plan.blocks2.emplace(plan.stream2 ? *plan.stream2 : *plan.stream, s.ctx_len, s.steps * s.batch_size * s.grad_accum * plan.world,
                         "stage 2", warn);
  }
  if (plan.dist) {
    plan.blocks1->shard(plan.dist->rank(), plan.world);
    if (plan.blocks2) plan.blocks2->shard(plan.dist->rank(), plan.world);
  }
  plan.blocks1->shuffle(c.data_shuffle, c.seed);
  if (plan.blocks2) plan.blocks2->shuffle(c.data_shuffle, c.seed + 1);
}

// Legal but suspicious settings: a context too short to hold the relations RoPE scaling changes,
// a warmup the stage never finishes.
void warnings_print(const RunPlan& plan) {
  constexpr int64_t kSmallContext = 16;
  const RestoreConfig& c = plan.config;
  const auto context = [&](const char* key, int64_t n) {
    if (n < kSmallContext)
      run_warn(plan, std::string("config key '") + key + "' (" + std::to_string(n) + ") is small: each row relates to at most " +
                         std::to_string(n) + " keys, far from the long-range relations RoPE scaling changes");
  };
  const auto warmup = [&](const char* key, int64_t w, const char* steps_key, int64_t steps) {
    if (w > steps)
      run_warn(plan, std::string("config key '") + key + "' (" + std::to_string(w) + ") exceeds " + steps_key + " (" +
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

// The run's peak planned before anything proportional to it is built (run_memory.h): refused with
// the estimate and the device's free memory, else printed with them.
void memory_plan(const RunPlan& plan) {
  const model::MemoryPlan p =
      run_memory_plan(plan.config, plan.teacher.model_config, plan.dtype, plan.last_trainable_layer, plan.name,
                      plan.passkey_lengths, plan.device.is_cpu());
  const std::string planned = model::memory_plan_check(p, plan.device);
  if (plan.main_rank) std::printf("%s\n", planned.c_str());
}

// The output folder locked by rank 0 (created when missing); every rank learns whether it was.
void output_lock(RunPlan& plan) {
  const auto lock = [&] {
    if (plan.main_rank) plan.lock = std::make_unique<OutputLock>(plan.config.output);
  };
  if (plan.dist) plan.dist->run_agreed("locking the output folder", lock);
  else lock();
}

}  // namespace

void run_warn(const RunPlan& plan, const std::string& what) {
  if (plan.main_rank) std::fprintf(stderr, "linear-ard: warning: %s\n", what.c_str());
}

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
  validation_lengths_check(plan);
  memory_plan(plan);
  streams_open(plan);
  blocks_open(plan);
  if (c.deterministic) deterministic_set();
  weights_place(plan);
  warnings_print(plan);
  output_lock(plan);
}

}  // namespace linear_ard::train

// bench_restore_gpu: the restore training step of `linear-ard restore` (objective_ard, the "qkv"
// TrainableSet, the trainer's fused AdamW through restore_step) on a LLaMA-2-7B-shaped model with random
// weights made on the GPU, timed at the paper's Appendix C settings, printed beside the paper's
// figures and the 7B-shape target below. Step cost does not depend on weight values or token ids.
//
//   bench_restore_gpu                 LLaMA-2-7B shape, bf16 on CUDA (fp32 on CPU: do not)
//   bench_restore_gpu --tiny          a 2-layer toy shape (CPU smoke run of the same code)
//   options: --steps N (timed, default 5) --warmup N (default 2) --no-checkpoint-layers
//            --checkpoint-layers N (recompute the first N layers, store the others' activations;
//            the default recomputes every layer)
//            --no-hold-gradients (fp32 gradients on the parameters, as before train/held_gradients.h)
//            --deterministic (the config key: the operator's deterministic backward, so that two
//            runs' losses can be compared bit for bit)
//            --no-overlap-teacher (the teacher's forward after, not beside, the student's; the
//            trainer's default overlaps them: train/teacher_overlap.h) --overlap-teacher (the default)
//            --cases last1:1024,last1:2048,last1:4096,last1:8192,all:4096 (the default; scope:ctx)
//            --trainable qkv|lora_qkv (default qkv) --lora-rank R (default 1024, alpha 2R: the
//            authors' peft setting, benchmarks/authors/README.md)
//            --profile DIR: one more step of each case under the trainer's StepProfile (its phases:
//            teacher forward, student forward, loss, backward with recompute, clipping, optimizer),
//            written to DIR/<scope>_<ctx>/summary.md; not part of the timed steps
// A benchmark, not a test: it prints figures, ratios and whether the target is met.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>
#ifdef LINEAR_ARD_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "linear_ard/model/device_choice.h"   // defines: device_choice_resolve
#include "linear_ard/model/llama_model.h"     // defines: kRecomputeAll
#include "linear_ard/model/llama_weights.h"   // defines: llama_weights_random
#include "linear_ard/model/rope.h"            // defines: rope_tables_init
#include "linear_ard/train/deterministic.h"   // defines: deterministic_set
#include "linear_ard/train/fused_adamw.h"     // defines: FusedAdamW (the trainer's optimizer)
#include "linear_ard/train/metrics_log.h"     // defines: memory_peak_bytes
#include "linear_ard/train/restore_config.h"  // defines: RestoreConfig (the trainer's defaults)
#include "linear_ard/train/restore_objective.h"  // defines: objective_context_make, objective_ard
#include "linear_ard/train/restore_step.h"    // defines: restore_step
#include "linear_ard/train/step_profile.h"    // defines: StepProfile
#include "linear_ard/train/trainable_set.h"   // defines: TrainableSet

namespace {

using namespace linear_ard;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string scope;  // "last1" (final layer) or "all"
  int64_t ctx = 0;
};

// What the table compares against, for a case: the paper's Appendix C (one RTX PRO 6000, 20-step
// averages) and the authors' public train.py rebuilt on one H200 (benchmarks/authors/README.md).
struct Reference {
  double paper_step_s = 0, paper_tokens_per_s = 0;
  double authors_h200_tokens_per_s = 0, authors_h200_peak_gib = 0;
};

std::optional<Reference> reference_for(const Case& c) {
  if (c.scope == "last1" && c.ctx == 1024) return Reference{0.48, 2144.0, 3032, 40.2};
  if (c.scope == "last1" && c.ctx == 2048) return Reference{0.78, 2629.0, 2783, 40.3};
  if (c.scope == "last1" && c.ctx == 4096) return Reference{1.56, 2628.1, 2237, 40.4};
  if (c.scope == "last1" && c.ctx == 8192) return Reference{3.61, 2267.1, 0, 0};
  if (c.scope == "all" && c.ctx == 4096) return Reference{5.50, 744.7, 169, 53.4};
  return std::nullopt;
}

// The target at the 7B shape, final-layer ARD at 4K: 5x the authors' trainer's tokens/s on an H200
// (the faster of its two measurements, 2,247 on 2026-12-01: benchmarks/authors/README.md) within its
// 40.4 GiB peak.
constexpr double kTargetTokensPerS = 5 * 2247.0;
constexpr double kTargetPeakGib = 40.4;

model::ModelConfig config_make(bool tiny) {
  model::ModelConfig c;
  c.architectures = {"LlamaForCausalLM"};
  c.vocab_size = tiny ? 256 : 32000;
  c.hidden_size = tiny ? 64 : 4096;
  c.intermediate_size = tiny ? 128 : 11008;
  c.num_hidden_layers = tiny ? 2 : 32;
  c.num_attention_heads = tiny ? 4 : 32;
  c.num_key_value_heads = tiny ? 4 : 32;
  c.rms_norm_eps = 1e-5;
  // LLaMA-2's native 4K, raised so that the 8K row runs: a timing, not a restoration.
  c.max_position_embeddings = tiny ? 512 : 8192;
  c.rope.theta = 10000.0;
  return c;
}

std::vector<Case> cases_parse(const std::string& text) {
  std::vector<Case> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw std::invalid_argument("--cases: '" + item + "' is not scope:ctx");
    Case c{item.substr(0, colon), std::stoll(item.substr(colon + 1))};
    if (c.scope != "last1" && c.scope != "all") throw std::invalid_argument("--cases: scope must be last1 or all");
    out.push_back(c);
    start = comma + 1;
  }
  return out;
}

void device_sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

void memory_peak_reset(const torch::Device& device) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
  }
#endif
  (void)device;
}

struct Measured {
  bool oom = false;
  double step_s = 0;  // median over the timed steps
  double peak_bytes = 0;
  double loss = 0;
};

// Runs `warmup` + `steps` restore steps of case `c` exactly as `linear-ard restore` does for
// method ard, the config's trainable set, one block of ctx tokens per step.
Measured case_run(const Case& c, const train::RestoreConfig& config, const model::LlamaWeights& weights,
                  const model::RopeTables& teacher_rope, const model::RopeTables& student_rope,
                  const torch::Device& device, torch::ScalarType dtype, int warmup, int steps,
                  const std::string& profile_dir, bool hold_gradients) {
  const int64_t num_layers = weights.config.num_hidden_layers;
  const std::vector<int64_t> layers = train::restore_layers_resolve(c.scope == "all" ? "all" : "last:1", num_layers);
  Measured m;
  memory_peak_reset(device);
  try {
    // The trainer's trainable set (q/k/v masters or LoRA adapters) of layers 0..last distilled layer.
    train::TrainableSet trainables(config.trainable, config.lora, weights.tensors, weights, layers.back(), device);
    train::FusedAdamW optimizer(trainables.parameters(),
                                torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay));
    const train::ObjectiveContext ctx =
        train::objective_context_make(config, weights, teacher_rope, student_rope, layers);
    const train::StageLoss loss = [&](const model::Overrides& o, const torch::Tensor& ids) {
      return train::objective_ard(ctx, o, ids);
    };
    const auto next_batch = [&] {
      return torch::randint(weights.config.vocab_size, {config.batch_size, c.ctx},
                            torch::TensorOptions(torch::kLong).device(device));
    };
    const auto step = [&](int i) {
      train::StepSettings s{config.grad_accum, config.lr, config.clip_grad_norm, dtype, i + 1};
      s.hold_gradients = hold_gradients;
      return train::restore_step(loss, trainables, optimizer, next_batch, s);
    };
    std::vector<double> times;
    for (int i = 0; i < warmup + steps; ++i) {
      device_sync(device);
      const auto t0 = Clock::now();
      m.loss = step(i).loss;
      device_sync(device);
      if (i >= warmup) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    m.step_s = times[times.size() / 2];
    m.peak_bytes = static_cast<double>(train::memory_peak_bytes(device));
    if (!profile_dir.empty()) {
      const int i = warmup + steps;
      train::StepProfile profile(profile_dir + "/" + c.scope + "_" + std::to_string(c.ctx), i + 1, 1, device);
      profile.step_begin(i + 1);
      step(i);
      profile.step_end(i + 1, c.ctx * config.batch_size, c.scope + " " + std::to_string(c.ctx));
    }
  } catch (const c10::OutOfMemoryError&) {
    m.oom = true;
  }
  memory_peak_reset(device);
  return m;
}

struct Options {
  bool tiny = false;
  int steps = 5, warmup = 2;
  int64_t checkpoint_layers = model::kRecomputeAll;
  bool overlap_teacher = train::RestoreConfig{}.overlap_teacher;
  std::string cases_text;  // default: the paper's rows for the shape
  std::string trainable = "qkv";
  int64_t lora_rank = 1024;
  std::string profile_dir;
  bool hold_gradients = true;
  bool deterministic = false;
};

Options options_parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tiny") o.tiny = true;
    else if (a == "--steps") o.steps = std::stoi(value());
    else if (a == "--warmup") o.warmup = std::stoi(value());
    else if (a == "--no-checkpoint-layers") o.checkpoint_layers = 0;
    else if (a == "--checkpoint-layers") o.checkpoint_layers = std::stoll(value());
    else if (a == "--overlap-teacher") o.overlap_teacher = true;
    else if (a == "--no-overlap-teacher") o.overlap_teacher = false;
    else if (a == "--cases") o.cases_text = value();
    else if (a == "--trainable") o.trainable = value();
    else if (a == "--lora-rank") o.lora_rank = std::stoll(value());
    else if (a == "--profile") o.profile_dir = value();
    else if (a == "--no-hold-gradients") o.hold_gradients = false;
    else if (a == "--deterministic") o.deterministic = true;
    else throw std::invalid_argument("unknown option " + a + " (see the header of bench_restore_gpu.cpp)");
  }
  if (o.steps < 1 || o.warmup < 0) throw std::invalid_argument("--steps must be >= 1 and --warmup >= 0");
  if (o.trainable != "qkv" && o.trainable != "lora_qkv") throw std::invalid_argument("--trainable must be qkv or lora_qkv");
  if (o.lora_rank < 1) throw std::invalid_argument("--lora-rank must be >= 1");
  if (o.checkpoint_layers < 0) throw std::invalid_argument("--checkpoint-layers must be >= 0");
  if (o.cases_text.empty())
    o.cases_text = o.tiny ? "last1:64,last1:128,last1:256,last1:512,all:256"
                          : "last1:1024,last1:2048,last1:4096,last1:8192,all:4096";
  return o;
}

// The trainer's defaults (lr, clipping, lambdas, objective) with the paper's setting.
train::RestoreConfig restore_config_make(const Options& o) {
  train::RestoreConfig config;
  config.trainable = o.trainable == "qkv" ? train::Trainable::kQkv : train::Trainable::kLoraQkv;
  config.lora.rank = o.lora_rank;
  config.lora.alpha = 2.0 * static_cast<double>(o.lora_rank);
  config.checkpoint_layers = o.checkpoint_layers;
  config.overlap_teacher = o.overlap_teacher;
  config.deterministic = o.deterministic;
  return config;
}

void header_print(const Options& o, const model::ModelConfig& mc, const model::DeviceChoice& choice, double made_s) {
  const std::string recompute = o.checkpoint_layers == model::kRecomputeAll ? "on"
                                : o.checkpoint_layers == 0                  ? "off"
                                                                            : "first " + std::to_string(o.checkpoint_layers);
  const std::string trainable = o.trainable == "qkv"
                                    ? "qkv (fp32 masters, AdamW)"
                                    : "lora_qkv r=" + std::to_string(o.lora_rank) + " (fp32 adapters, AdamW)";
  std::printf("bench_restore_gpu: %s shape (hidden %ld, %ld layers, %ld heads, ffn %ld, vocab %ld), %s %s, "
              "random weights made in %.1f s; student PI x8; trainable %s; "
              "checkpoint_layers %s; overlap_teacher %s; gradients %s; batch 1; median of %d steps after %d warm-up\n",
              o.tiny ? "tiny" : "LLaMA-2-7B", static_cast<long>(mc.hidden_size), static_cast<long>(mc.num_hidden_layers),
              static_cast<long>(mc.num_attention_heads), static_cast<long>(mc.intermediate_size),
              static_cast<long>(mc.vocab_size), choice.device_name.c_str(), choice.dtype_name.c_str(), made_s,
              trainable.c_str(), recompute.c_str(), o.overlap_teacher ? "on" : "off",
              o.hold_gradients && choice.dtype != torch::kFloat ? "held in the model dtype" : "fp32 on the parameters", o.steps,
              o.warmup);
  std::printf("\n| layers distilled | ctx | step s | tokens/s | peak GiB | paper App. C step s | paper tokens/s "
              "| x paper | authors' code, H200 tokens/s (peak GiB) | target |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
}

// One table row: the measurement, the paper's figures and the authors' beside it, the target's verdict.
void row_print(const Case& c, const Measured& m, bool tiny, int64_t num_layers, int64_t batch_size) {
  const std::string scope = c.scope == "all" ? "all " + std::to_string(num_layers) : "last 1";
  const std::optional<Reference> ref = tiny ? std::nullopt : reference_for(c);
  char measured[128], paper[128] = "| - | - | - ", authors[64] = "-", target[96] = "-";
  const double tokens_per_s = m.oom ? 0 : static_cast<double>(c.ctx * batch_size) / m.step_s;
  if (m.oom) std::snprintf(measured, sizeof measured, "| out of memory | - | - ");
  else std::snprintf(measured, sizeof measured, "| %.3f | %.0f | %.1f ", m.step_s, tokens_per_s, m.peak_bytes / (1 << 30));
  if (ref) {
    if (m.oom) std::snprintf(paper, sizeof paper, "| %.2f | %.1f | - ", ref->paper_step_s, ref->paper_tokens_per_s);
    else std::snprintf(paper, sizeof paper, "| %.2f | %.1f | %.2fx ", ref->paper_step_s, ref->paper_tokens_per_s,
                       tokens_per_s / ref->paper_tokens_per_s);
    if (ref->authors_h200_tokens_per_s > 0)
      std::snprintf(authors, sizeof authors, "%.0f (%.1f)", ref->authors_h200_tokens_per_s, ref->authors_h200_peak_gib);
  }
  if (!tiny && c.scope == "last1" && c.ctx == 4096) {
    const double gib = m.peak_bytes / (1 << 30);
    const bool met = !m.oom && tokens_per_s >= kTargetTokensPerS && gib <= kTargetPeakGib;
    std::snprintf(target, sizeof target, ">= %.0f tok/s, <= %.1f GiB: %s", kTargetTokensPerS, kTargetPeakGib,
                  met ? "met" : "MISSED");
  }
  std::printf("| %s | %ld %s%s| %s | %s |\n", scope.c_str(), static_cast<long>(c.ctx), measured, paper, authors, target);
  if (!m.oom) std::printf("  (loss of the last timed step: %.9g)\n", m.loss);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = options_parse(argc, argv);
    if (o.deterministic) train::deterministic_set();  // as `linear-ard restore` does, before any GEMM
    const std::vector<Case> cases = cases_parse(o.cases_text);
    const model::DeviceChoice choice = model::device_choice_resolve("auto", "auto", "device", "dtype");
    const model::ModelConfig mc = config_make(o.tiny);
    for (const Case& c : cases)
      if (c.ctx > mc.max_position_embeddings)
        throw std::invalid_argument("--cases: ctx " + std::to_string(c.ctx) + " beyond the model's " +
                                    std::to_string(mc.max_position_embeddings) + " positions");
    const train::RestoreConfig config = restore_config_make(o);

    const auto t0 = Clock::now();
    const model::LlamaWeights weights = model::llama_weights_random(mc, choice.dtype, choice.device, /*seed=*/0);
    device_sync(choice.device);
    const model::RopeTables teacher_rope = model::rope_tables_init(mc);
    model::RopeConfig scaled = mc.rope;
    scaled.type = model::RopeType::kLinear;
    scaled.factor = 8.0;
    const model::RopeTables student_rope = model::rope_tables_init(mc, scaled);
    header_print(o, mc, choice, std::chrono::duration<double>(Clock::now() - t0).count());
    for (const Case& c : cases) {
      const Measured m = case_run(c, config, weights, teacher_rope, student_rope, choice.device, choice.dtype,
                                  o.warmup, o.steps, o.profile_dir, o.hold_gradients);
      row_print(c, m, o.tiny, mc.num_hidden_layers, config.batch_size);
    }
    std::printf("\npaper App. C: one RTX PRO 6000 (96 GB), 20-step averages; authors' code: their train.py (peft "
                "LoRA r=1024 on q/k/v, gradient checkpointing) around their Triton kernels on one H200, "
                "benchmarks/authors/README.md. Peak: CUDA caching allocator's max allocated bytes in the case "
                "(process max RSS on CPU).\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_restore_gpu: %s\n", e.what());
    return 1;
  }
}

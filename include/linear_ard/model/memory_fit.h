// memory_fit: the memory free for new tensors on a device, the check that a model's parameters
// fit there, and memory plans: a command's peak estimated part by part (weights, fp32 masters,
// optimizer state, activations at its context and batch, KV cache) from config.json's sizes and
// the command's own, checked before anything is allocated. docs/reliability.md gives the formulas
// and their error measured against peak memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

// Bytes that new tensors on `device` can take: on CUDA the driver's free memory of the device; on
// the CPU /proc/meminfo's MemAvailable (sysconf's free pages without it), capped by the cgroup's
// memory.max - memory.current where a limit is set (a container's budget, not the host's).
int64_t memory_available(torch::Device device);

// "3.2 GiB", "5.6 EiB": bytes in binary units with 3 significant digits.
std::string memory_bytes_text(double bytes);

// config.json's sizes that decide the parameter count ("vocab_size=2048, hidden_size=256, ...").
std::string model_config_sizes_text(const ModelConfig& config);

// Throws std::invalid_argument "<what> gives <parameters> parameters (<bytes> in <dtype>), more
// than the <free> of memory available on <device>" when `parameters` elements of `dtype` exceed
// memory_available(device).
void memory_fit_check(double parameters, torch::ScalarType dtype, torch::Device device, const std::string& what);

// One part of a plan, in bytes (doubles: an absurd size stays a number to refuse).
struct MemoryPart {
  std::string what;    // "KV cache of 1000000000010 positions"
  double bytes = 0;
  bool host = false;   // held in host memory whatever the device (prompt texts)
};
struct MemoryPlan {
  std::string what;  // the command and the sizes it plans for: "eval passkey at length 1000000000000"
  std::vector<MemoryPart> parts;
};

// "weights 256 MiB + KV cache of 1000000000010 positions 4.3 TiB + ...".
std::string memory_plan_text(const MemoryPlan& plan);
// Throws std::invalid_argument "<what> needs an estimated <total> (<parts>), more than the <free>
// of memory available on <device>" when the device parts (every part, on the CPU) exceed
// memory_available(device), or the host parts exceed the host's. Returns, for the log, "<what>
// needs an estimated <total> (<parts>) of the <free> available on <device>".
std::string memory_plan_check(const MemoryPlan& plan, torch::Device device);

// The estimates plans are made of. Activations are counted in elements per token of one decoder
// layer: what its backward keeps (6 hidden-sized: norms and residuals; the q/k/v projection and its
// RoPE copy, 2 (q + 2 kv); the K/V heads repeated for SDPA and the attention output, 3 q; SwiGLU's
// gate, up, activation and product, 4 intermediate), q = heads x head_dim, kv = kv_heads x head_dim.
double memory_layer_elements(const ModelConfig& config);
// config.json's parameters in `dtype`.
double memory_weights_bytes(const ModelConfig& config, torch::ScalarType dtype);
// A forward without gradients over `tokens` positions (batch x length): the residual stream and
// its norm beside one layer's transients, the largest set alive at once.
double memory_forward_bytes(const ModelConfig& config, double tokens, torch::ScalarType dtype);
// What a forward with gradients over `tokens` positions keeps for backward in `layers` layers.
double memory_backward_bytes(const ModelConfig& config, double tokens, double layers, torch::ScalarType dtype);
// The KV cache of `positions` (summed over the batch) in every layer; on the CPU each decode step
// concatenates one layer's cache into a new one, which adds one layer's worth.
double memory_kv_cache_bytes(const ModelConfig& config, double positions, torch::ScalarType dtype, bool cpu);
// fp32 logits of `positions` over the vocabulary with the log-softmax and its exp beside them.
double memory_logits_bytes(const ModelConfig& config, double positions);

}  // namespace linear_ard::model

// memory_fit: the memory free for new tensors on a device, and the check that a model's
// parameters fit there, made before anything is allocated.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace linear_ard::model

// DeviceChoice: the device and dtype a model runs in, resolved from the names configs and command
// lines use ("auto" | "cpu" | "cuda", "auto" | "fp32" | "bf16"); shared by the trainer and eval.
#pragma once

#include <string>

#include <torch/torch.h>

namespace linear_ard::model {

struct DeviceChoice {
  std::string device_name;  // "cpu" or "cuda"
  std::string dtype_name;   // "fp32" or "bf16"
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat;
};

// "auto" device = cuda when a CUDA device is available, else cpu; "auto" dtype = bf16 on cuda,
// fp32 on cpu. Throws std::invalid_argument naming `device_key` / `dtype_key` (e.g. "config key
// 'device'") for an unknown name or a cuda request on a machine without a CUDA device.
DeviceChoice device_choice_resolve(const std::string& device, const std::string& dtype,
                                   const std::string& device_key = "device",
                                   const std::string& dtype_key = "dtype");

}  // namespace linear_ard::model

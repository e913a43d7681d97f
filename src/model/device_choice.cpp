// device_choice_resolve: names from configs and command lines to a torch device and dtype.
#include "linear_ard/model/device_choice.h"

#include <stdexcept>

namespace linear_ard::model {

DeviceChoice device_choice_resolve(const std::string& device, const std::string& dtype,
                                   const std::string& device_key, const std::string& dtype_key) {
  if (device != "auto" && device != "cpu" && device != "cuda")
    throw std::invalid_argument(device_key + " must be cpu, cuda or auto, not '" + device + "'");
  if (dtype != "auto" && dtype != "fp32" && dtype != "bf16")
    throw std::invalid_argument(dtype_key + " must be fp32, bf16 or auto, not '" + dtype + "'");
  DeviceChoice c;
  c.device_name = device == "auto" ? (torch::cuda::is_available() ? "cuda" : "cpu") : device;
  if (c.device_name == "cuda" && !torch::cuda::is_available())
    throw std::invalid_argument(device_key + " is cuda but no CUDA device is available");
  c.dtype_name = dtype == "auto" ? (c.device_name == "cuda" ? "bf16" : "fp32") : dtype;
  c.device = torch::Device(c.device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  c.dtype = c.dtype_name == "bf16" ? torch::kBFloat16 : torch::kFloat;
  return c;
}

}  // namespace linear_ard::model

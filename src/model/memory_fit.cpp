// memory_fit: free memory of a device, the parameters-fit check, memory plans and their estimates.
#include "linear_ard/model/memory_fit.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include <c10/core/CachingDeviceAllocator.h>

namespace linear_ard::model {
namespace {

// The first number of `path` (a cgroup file holds one; "max" means no limit), or -1.
int64_t file_number(const char* path) {
  std::ifstream in(path);
  int64_t value = -1;
  if (!(in >> value)) return -1;
  return value;
}

int64_t host_available() {
  int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
    meminfo.ignore(64, '\n');
  }
  if (available < 0) available = static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const int64_t limit = file_number("/sys/fs/cgroup/memory.max");
  const int64_t used = file_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0) available = std::min(available, std::max<int64_t>(0, limit - used));
  return available;
}

}  // namespace

int64_t memory_available(torch::Device device) {
  if (!device.is_cuda()) return host_available();
  const auto index = static_cast<c10::DeviceIndex>(device.index() < 0 ? 0 : device.index());
  return static_cast<int64_t>(c10::getDeviceAllocator(c10::kCUDA)->getMemoryInfo(index).first);
}

std::string memory_bytes_text(double bytes) {
  constexpr const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) bytes /= 1024, ++u;
  char text[48];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return text;
}

std::string model_config_sizes_text(const ModelConfig& c) {
  return "vocab_size=" + std::to_string(c.vocab_size) + ", hidden_size=" + std::to_string(c.hidden_size) +
         ", intermediate_size=" + std::to_string(c.intermediate_size) +
         ", num_hidden_layers=" + std::to_string(c.num_hidden_layers) +
         ", num_attention_heads=" + std::to_string(c.num_attention_heads) +
         ", num_key_value_heads=" + std::to_string(c.num_key_value_heads) +
         ", head_dim=" + std::to_string(model_config_head_dim(c));
}

void memory_fit_check(double parameters, torch::ScalarType dtype, torch::Device device, const std::string& what) {
  const double bytes = parameters * static_cast<double>(c10::elementSize(dtype));
  const auto available = static_cast<double>(memory_available(device));
  if (bytes <= available) return;
  char count[32];
  std::snprintf(count, sizeof count, "%.3g", parameters);
  throw std::invalid_argument(what + " gives " + count + " parameters (" + memory_bytes_text(bytes) + " in " +
                              c10::toString(dtype) + "), more than the " + memory_bytes_text(available) +
                              " of memory available on " + device.str());
}

std::string memory_plan_text(const MemoryPlan& plan) {
  std::string text;
  for (const MemoryPart& p : plan.parts)
    text += (text.empty() ? "" : " + ") + p.what + " " + memory_bytes_text(p.bytes) + (p.host ? " (host)" : "");
  return text;
}

std::string memory_plan_check(const MemoryPlan& plan, torch::Device device) {
  double on_device = 0, on_host = 0;
  for (const MemoryPart& p : plan.parts) (p.host && device.is_cuda() ? on_host : on_device) += p.bytes;
  const auto need_text = [&](double need) {
    return plan.what + " needs an estimated " + memory_bytes_text(need) + " (" + memory_plan_text(plan) + ")";
  };
  const auto refuse = [&](double need, torch::Device where) {
    const auto available = static_cast<double>(memory_available(where));
    if (need > available)
      throw std::invalid_argument(need_text(need) + ", more than the " + memory_bytes_text(available) +
                                  " of memory available on " + where.str());
    return available;
  };
  const double available = refuse(on_device, device);
  if (on_host > 0) refuse(on_host, torch::kCPU);
  return need_text(on_device) + " of the " + memory_bytes_text(available) + " available on " + device.str();
}

double memory_layer_elements(const ModelConfig& c) {
  const double d = static_cast<double>(model_config_head_dim(c));
  const double h = static_cast<double>(c.hidden_size), f = static_cast<double>(c.intermediate_size);
  const double q = static_cast<double>(c.num_attention_heads) * d, kv = static_cast<double>(c.num_key_value_heads) * d;
  return 6 * h + 2 * (q + 2 * kv) + 3 * q + 4 * f;
}

double memory_weights_bytes(const ModelConfig& c, torch::ScalarType dtype) {
  return model_config_param_count(c) * static_cast<double>(c10::elementSize(dtype));
}

double memory_forward_bytes(const ModelConfig& c, double tokens, torch::ScalarType dtype) {
  return tokens * (2 * static_cast<double>(c.hidden_size) + memory_layer_elements(c)) *
         static_cast<double>(c10::elementSize(dtype));
}

double memory_backward_bytes(const ModelConfig& c, double tokens, double layers, torch::ScalarType dtype) {
  return tokens * layers * memory_layer_elements(c) * static_cast<double>(c10::elementSize(dtype));
}

double memory_kv_cache_bytes(const ModelConfig& c, double positions, torch::ScalarType dtype, bool cpu) {
  const double kv = static_cast<double>(c.num_key_value_heads * model_config_head_dim(c));
  const double layers = static_cast<double>(c.num_hidden_layers) + (cpu ? 1 : 0);
  return 2 * layers * kv * positions * static_cast<double>(c10::elementSize(dtype));
}

double memory_logits_bytes(const ModelConfig& c, double positions) {
  return 3 * positions * static_cast<double>(c.vocab_size) * 4;
}

}  // namespace linear_ard::model

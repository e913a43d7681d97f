// memory_fit: free memory of a device and the parameters-fit check.
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

}  // namespace linear_ard::model

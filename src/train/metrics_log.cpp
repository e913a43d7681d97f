// metrics_log: JSONL metrics, the progress line, and peak memory.
#include "linear_ard/train/metrics_log.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#ifdef LINEAR_ARD_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace linear_ard::train {

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot write metrics file " + path);
}

void MetricsLog::append(const nlohmann::json& record) {
  out_ << record.dump() << "\n";
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write metrics file " + path_);
}

int64_t memory_peak_bytes(const torch::Device& device) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  (void)device;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

MemoryNow memory_now(const torch::Device& device) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    const auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    return {stats.allocated_bytes[all].current, stats.reserved_bytes[all].current};
  }
#endif
  (void)device;
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  const int64_t bytes = static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
  return {bytes, bytes};
}

void memory_cache_release(const torch::Device& device) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  (void)device;
}

namespace {

// Whether an in-place progress line is on screen and needs a newline before other output.
bool progress_line_open = false;

bool stdout_is_terminal() {
  static const bool tty = isatty(fileno(stdout)) != 0;
  return tty;
}

std::string duration_text(double s) {
  const auto total = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (total >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", total / 3600, total % 3600 / 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", total / 60, total % 60);
  return buf;
}

}  // namespace

void progress_print(int64_t step, int64_t total, double loss, double lr, double tokens_per_s, double eta_s) {
  const bool tty = stdout_is_terminal();
  std::printf("%sstep %ld/%ld | loss %.4f | lr %.2e | %.0f tok/s | ETA %s%s", tty ? "\r" : "",
              static_cast<long>(step), static_cast<long>(total), loss, lr, tokens_per_s,
              duration_text(eta_s).c_str(), tty ? "\033[K" : "\n");
  std::fflush(stdout);
  progress_line_open = tty;
}

void progress_break() {
  if (progress_line_open) std::printf("\n");
  progress_line_open = false;
}

}  // namespace linear_ard::train

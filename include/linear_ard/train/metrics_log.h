// MetricsLog: the trainer's JSONL metrics file, its progress line, and the peak-memory probe.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace linear_ard::train {

class MetricsLog {
 public:
  // Creates (truncates) `path`; throws std::runtime_error naming it when it cannot.
  explicit MetricsLog(const std::string& path);
  // Appends `record` as one line and flushes, so a run that dies keeps every finished step.
  void append(const nlohmann::json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

// Peak memory so far in bytes: CUDA max allocated on a CUDA device, else the process's max RSS.
int64_t memory_peak_bytes(const torch::Device& device);

// Memory in use now, in bytes: on a CUDA device what the caching allocator has allocated and what it
// holds reserved (allocated + cached); on a CPU the process's resident set, as both.
struct MemoryNow {
  int64_t allocated = 0;
  int64_t reserved = 0;
};
MemoryNow memory_now(const torch::Device& device);

// Hands the caching allocator's unused blocks back to the CUDA device, those of the released
// private pools of the decode steps' CUDA graphs too (which no other allocation can reuse); nothing
// on a CPU.
void memory_cache_release(const torch::Device& device);

// Prints "step 12/200 | loss 1.2345 | lr 2.00e-05 | 1234 tok/s | ETA 1m02s" to stdout: with a
// carriage return (rewritten in place) on a terminal, one line per call otherwise.
void progress_print(int64_t step, int64_t total, double loss, double lr, double tokens_per_s,
                    double eta_s);
// Ends an in-place progress line before other output (no-op when not on a terminal).
void progress_break();

}  // namespace linear_ard::train

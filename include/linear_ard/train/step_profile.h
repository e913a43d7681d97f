// step_profile: torch's profiler (Kineto) over chosen optimizer steps of a training run, with the
// step's named phases (teacher forward, student forward, loss, backward, clipping, optimizer), and
// a per-step summary of where the time goes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <ATen/record_function.h>
#include <torch/torch.h>

namespace linear_ard::train {

// Profiles global steps [first, first + steps) of a run on `device` (CPU ops always; CUDA kernels
// too on a CUDA device). At the end writes, into `folder`: trace.json (Chrome trace format: Perfetto
// or chrome://tracing) and summary.md (phase times, device kernels and CPU operators per step).
// While a profiled step runs, every phase boundary synchronizes the device, so a phase's time is
// its device time; the profiled steps are therefore slower than the others.
class StepProfile {
 public:
  StepProfile(std::string folder, int64_t first, int64_t steps, torch::Device device);
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  // Around each optimizer step of the run; `tokens` are the step's training tokens.
  void step_begin(int64_t global_step);
  void step_end(int64_t global_step, int64_t tokens, const std::string& title);

 private:
  std::string folder_;
  int64_t first_, last_;
  torch::Device device_;
  bool active_ = false;
  int64_t tokens_ = 0;
};

// Whether a StepProfile is recording a step now (its phases synchronize the device).
bool step_profile_active();

// A named phase of a step ("teacher_forward", ...), recorded as the profiler range
// "phase:<name>" while a StepProfile is active, and free otherwise.
class PhaseScope {
 public:
  explicit PhaseScope(const char* name);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  std::optional<at::RecordFunction> range_;
};

}  // namespace linear_ard::train

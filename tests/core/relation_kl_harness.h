// The operator harness's pieces, shared by relation_kl_ops (this folder) and dev/cuda: running the
// relation-KL on a backend into a RelationKLProblem's buffers, its errors against the fp64
// reference with the check's tolerances, and timing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "linear_ard/core/relation_kl_problem.h"    // defines: RelationKLProblem
#include "linear_ard/core/relation_kl_reference.h"  // defines: RelationKLReference

#ifdef LINEAR_ARD_WITH_CUDA
#include "relation_kl_cuda_kernels.h"  // defines: RelationKLCudaKernels
#endif

namespace linear_ard::harness {

// A way to run the operator: "cpu", or on CUDA the kernels "default" (what the library picks),
// "mma" (the mma.sync kernels) or "simt", each also as "<kernels>-det": the deterministic backward
// (RelationKLParams::deterministic).
struct Runner {
  std::string name;
  bool cuda = false;
  bool deterministic = false;
#ifdef LINEAR_ARD_WITH_CUDA
  RelationKLCudaKernels kernels = RelationKLCudaKernels::kDefault;
#endif
};

// The runners of --backend cpu|cuda and a comma-separated list of CUDA kernels (default, mma, simt,
// default-det, mma-det, simt-det); throws std::invalid_argument naming an unknown backend or kernel
// name.
std::vector<Runner> runners(const std::string& backend, const std::string& kernels);

// Whether the check runs `r` on a case: the CUDA tensor-core runners take 16-bit inputs only
// (fp32 always runs SIMT), "mma" only where it is not what "default" runs already (on sm_90a with
// D <= 128 "default" is the wgmma forward and backward, "mma" the mma.sync ones), and SIMT
// n <= 400 (slow and covered).
bool runner_takes(const Runner& r, RelationKLProblem& problem);

// The backward kernel `r` runs on the problem ("cpu", "wgmma+tma", "wgmma", "mma.sync" or "simt",
// with "/det" for a deterministic runner); the forward kernel is chosen alike
// (relation_kl_forward_cuda_kernel_name), so it names both passes' path.
std::string backward_kernel(const Runner& r, RelationKLProblem& problem);

// Forward and backward of the problem on `r`, outputs into the problem's buffers (which are first
// filled with NaN, so an element the operator forgets fails every comparison). `backwards` > 1
// runs the backward that many times (after one forward, outputs poisoned before each) and returns
// whether every run gave the same dx and dy bits.
bool run(const Runner& r, RelationKLProblem& problem, int backwards = 1);

// The check's errors of a run against the reference, and its tolerances by dtype.
struct Errors {
  double kl = 0, lse = 0, dx = 0, dy = 0;
  bool within_tolerance(DType dtype) const;
};
Errors reference_errors(RelationKLProblem& problem, const RelationKLReference& ref);

// Median milliseconds of `fn` over `reps` runs after `warmup` runs (CUDA events when cuda, so
// `fn` only queues work; else wall clock).
double time_ms(const std::function<void()>& fn, int reps, int warmup, bool cuda);

#ifdef LINEAR_ARD_WITH_CUDA
// The device-side mirror of a problem: inputs copied, outputs allocated, params re-pointed.
class DeviceProblem {
 public:
  explicit DeviceProblem(RelationKLProblem& problem);
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
  ~DeviceProblem();
  RelationKLParams& params() { return p_; }
  // NaN bytes in every output; in dx and dy only (the backward reads the forward's LSEs).
  void poison();
  void poison_grads();
  // Copies the outputs into the problem's buffers (after a device synchronisation).
  void download(RelationKLProblem& problem) const;

 private:
  void* copy(const void* host, size_t bytes);
  RelationKLParams p_;
  std::vector<std::pair<void*, size_t>> buffers_;
  std::pair<void*, size_t> kl_, lse_s_, lse_t_, dx_, dy_{nullptr, 0};
};
#endif

}  // namespace linear_ard::harness

// teacher_overlap: the frozen teacher's forward run beside the student's, on a second host thread
// and a second CUDA stream.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <optional>

#include <torch/torch.h>

#include "linear_ard/model/llama_model.h"

namespace linear_ard::train {

// Starts `forward` (under torch::NoGradGuard) so that it runs while the caller goes on with the
// student's forward; get() returns its outputs. The two forwards are independent until the loss, and
// a small model's step is partly bound by launching its kernels from one host thread: a second thread
// (one long-lived thread of the process) launching the teacher's onto a second stream fills some of the
// gaps (+3-4 % on SmolLM2-135M, about +1 % at the 7B shape: docs/training.md). On by default
// (RestoreConfig::overlap_teacher); its occasional difference from the plain order in bf16 is the
// operator's dX atomics' order, which a busy GPU changes with the overlap off too (docs/training.md).
//
// On a CUDA `device` with `overlap` on, the side stream (one per device, from torch's pool) first
// waits for the caller's current stream, so `forward` sees every earlier write (the ids, the weights);
// get() makes the caller's stream wait for the side stream and records the outputs' storage on the
// caller's stream for the caching allocator. The thread carries the caller's thread-local torch state
// (at::ThreadLocalState). While a StepProfile records, the constructor waits for `forward` (on that
// thread and stream still: the main thread has not built the teacher's cuDNN plans), so the profiled
// step's phases keep their own device time. Anywhere else (CPU, `overlap` off) `forward` runs inline
// in the constructor, in the order of the plain code. Either way the same kernels run on the same
// inputs (checked on the GPU by tests/gpu/check_teacher_overlap.py).
class TeacherOverlap {
 public:
  TeacherOverlap(torch::Device device, bool overlap, std::function<model::ModelOutputs()> forward);
  ~TeacherOverlap();  // waits for the thread if get() was not reached (an exception in between)
  TeacherOverlap(const TeacherOverlap&) = delete;
  TeacherOverlap& operator=(const TeacherOverlap&) = delete;

  // Once. Rethrows what `forward` threw.
  model::ModelOutputs get();

 private:
  struct Streams;
  std::optional<model::ModelOutputs> inline_;
  std::future<model::ModelOutputs> pending_;
  std::unique_ptr<Streams> streams_;
};

}  // namespace linear_ard::train

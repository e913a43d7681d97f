// teacher_overlap: the frozen teacher's forward beside the student's (second host thread and stream).
#include "linear_ard/train/teacher_overlap.h"

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <ATen/ThreadLocalState.h>
#include <c10/core/thread_pool.h>

#ifdef LINEAR_ARD_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "linear_ard/train/step_profile.h"  // defines: step_profile_active

namespace linear_ard::train {

#ifdef LINEAR_ARD_WITH_CUDA
struct TeacherOverlap::Streams {
  c10::cuda::CUDAStream caller, side;
};

namespace {

// One long-lived host thread for every overlap of the process. torch keeps per-thread state (the
// cuBLAS and cuDNN handles, cuDNN's attention execution plans): a fresh thread per step builds it again
// every step, which on the GPU cost more than the overlap gained (measured: docs/training.md).
c10::ThreadPool& overlap_thread() {
  static c10::ThreadPool pool(1);
  return pool;
}

// One side stream per device for the process, so that the thread's cuBLAS workspace (kept per handle
// and stream) is made once, not per stream of torch's pool.
c10::cuda::CUDAStream side_stream(c10::DeviceIndex index) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = streams.find(index);
  if (it == streams.end()) it = streams.emplace(index, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)).first;
  return it->second;
}

void record_on(const torch::Tensor& t, const c10::cuda::CUDAStream& stream) {
  if (t.defined() && t.is_cuda()) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
}

}  // namespace
#else
struct TeacherOverlap::Streams {};
#endif

TeacherOverlap::TeacherOverlap(torch::Device device, bool overlap, std::function<model::ModelOutputs()> forward) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (overlap && device.is_cuda()) {
    const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
    streams_ = std::make_unique<Streams>(Streams{c10::cuda::getCurrentCUDAStream(index), side_stream(index)});
    at::cuda::CUDAEvent ready;
    ready.record(streams_->caller);
    ready.block(streams_->side);
    auto promise = std::make_shared<std::promise<model::ModelOutputs>>();
    pending_ = promise->get_future();
    overlap_thread().run([promise, side = streams_->side, state = at::ThreadLocalState(), forward = std::move(forward)] {
      try {
        at::ThreadLocalStateGuard tls(state);
        c10::cuda::CUDAStreamGuard stream(side);
        torch::NoGradGuard no_grad;
        promise->set_value(forward());
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
    // A profiled step keeps its phases apart: the student's forward starts after the teacher's.
    if (step_profile_active()) pending_.wait();
    return;
  }
#endif
  (void)device;
  (void)overlap;
  torch::NoGradGuard no_grad;
  inline_ = forward();
}

TeacherOverlap::~TeacherOverlap() {
  if (pending_.valid()) pending_.wait();
}

model::ModelOutputs TeacherOverlap::get() {
  if (inline_) return *std::exchange(inline_, std::nullopt);
  if (!pending_.valid()) throw std::logic_error("TeacherOverlap::get: called twice");
  model::ModelOutputs out = pending_.get();
#ifdef LINEAR_ARD_WITH_CUDA
  at::cuda::CUDAEvent done;
  done.record(streams_->side);
  done.block(streams_->caller);
  record_on(out.logits, streams_->caller);
  record_on(out.last_hidden_state, streams_->caller);
  for (const auto& h : out.hidden_states) record_on(h, streams_->caller);
  for (const auto& [layer, qkv] : out.qkv) {
    record_on(qkv.q, streams_->caller);
    record_on(qkv.k, streams_->caller);
    record_on(qkv.v, streams_->caller);
  }
#endif
  return out;
}

}  // namespace linear_ard::train

// Stream-ordered scratch memory for a launcher that needs a small buffer between its own launches
// (the sm_90a forward's per-CTA flags), from a pool of the library's own: cudaMallocFromPoolAsync and
// cudaFreeAsync on the launch stream, so that no call synchronises and concurrent streams never
// share a buffer. The pool keeps what it has (release threshold: everything), so after the first
// call an allocation is a few microseconds of host time and no device work. A pool a device,
// created on first use; the caching allocator of a framework (torch's) is not involved.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "relation_kl_common.cuh"  // defines: cuda_check

namespace linear_ard {
namespace cuda {

// The library's pool on the current device.
inline cudaMemPool_t scratch_pool() {
  constexpr int kMaxDevices = 64;
  static cudaMemPool_t pools[kMaxDevices] = {};
  static std::mutex mutex;
  int device = 0;
  cuda_check(cudaGetDevice(&device), "scratch: current device");
  if (device < 0 || device >= kMaxDevices) throw std::runtime_error("linear_ard CUDA: scratch: device index out of range");
  std::lock_guard<std::mutex> lock(mutex);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cuda_check(cudaMemPoolCreate(&pools[device], &props), "scratch: create pool");
    uint64_t keep = UINT64_MAX;
    cuda_check(cudaMemPoolSetAttribute(pools[device], cudaMemPoolAttrReleaseThreshold, &keep),
               "scratch: pool release threshold");
  }
  return pools[device];
}

// `count` ints on `stream`, zeroed on it; freed on the same stream when the object goes (after the
// launches that use it were queued: stream order keeps them ahead of the free).
class ScratchInts {
 public:
  ScratchInts(size_t count, cudaStream_t stream) : stream_(stream) {
    void* p = nullptr;
    cuda_check(cudaMallocFromPoolAsync(&p, count * sizeof(int), scratch_pool(), stream), "scratch: allocate");
    data_ = static_cast<int*>(p);
    cuda_check(cudaMemsetAsync(data_, 0, count * sizeof(int), stream), "scratch: zero");
  }
  ~ScratchInts() { cudaFreeAsync(data_, stream_); }
  ScratchInts(const ScratchInts&) = delete;
  ScratchInts& operator=(const ScratchInts&) = delete;
  int* data() const { return data_; }

 private:
  int* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace cuda
}  // namespace linear_ard

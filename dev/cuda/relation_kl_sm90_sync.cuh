// Hopper (sm_90a) synchronisation building blocks of the warp-specialised dev kernels: shared-memory
// mbarriers (init, arrive, parity wait) between a producer warp and consumer warpgroups, and named
// barriers (bar.sync / bar.arrive with a thread count) for the consumers' ping-pong. Only dev/cuda
// uses them; they compile to code only in the sm_90a pass (LINEAR_ARD_SM90A), as the wgmma
// wrappers of relation_kl_sm90.cuh.
#pragma once

#include <cstdint>

#include "relation_kl_sm90.cuh"  // defines: LINEAR_ARD_SM90A, smem_u32

namespace linear_ard {
namespace cuda {

// mbarrier in shared memory expecting `count` arrivals per phase. Make it visible to the other
// threads (fence_mbarrier_init, then a CTA barrier) before any of them uses it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void fence_mbarrier_init() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival (release semantics at CTA scope: this thread's earlier writes, made visible to the
// async proxy by fence_proxy_async where wgmma reads them, are seen by the threads its phase wakes).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(smem_u32(bar))
               : "memory");
#endif
}

// Waits (acquire) until the phase of parity `parity` has completed: phase k of a barrier has
// parity k & 1, and the first phase (0) is the one in progress after init. A dev-harness watchdog:
// after 2^28 failed tries (each try_wait suspends for a while before it fails: seconds in all, where
// a real wait lasts microseconds) the kernel traps, so that a phase bookkeeping error shows as a
// launch failure instead of a hung process.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#ifdef LINEAR_ARD_SM90A
  const uint32_t addr = smem_u32(bar);
  uint32_t done;
  for (uint32_t tries = 0;; ++tries) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
    if (done) break;
    if (tries == (1u << 28)) __trap();
  }
#endif
}

// Named barrier `id` (1..15; 0 is __syncthreads) completing when `threads` threads (a multiple of
// 32) have reached it: sync waits there, arrive only counts itself in and goes on.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
#endif
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
#endif
}

// Warpgroup register reallocation (every warp of the warpgroup executes it): lowers this
// warpgroup's per-thread register count to N (dec) or raises it to N (inc; waits until the
// registers freed by other warpgroups' dec are there). N a multiple of 8 in [24, 256].
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

}  // namespace cuda
}  // namespace linear_ard

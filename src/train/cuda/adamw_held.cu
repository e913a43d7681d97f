// AdamW on fp32 parameters from gradients held in the model dtype (train_kernels.h). torch's fused
// kernel takes one dtype for parameters and gradients, so a bf16 gradient would need an fp32 copy
// first (at the LLaMA-2-7B shape with Q/K/V masters, 6.4 GB of traffic and ~5 ms a step); this
// kernel reads the bf16 gradient where it lies. The update's arithmetic is torch's, operation for
// operation (fp32, its FMAs where it writes them, IEEE division and square root), so the result
// equals the cast-up path bit for bit (tests/train/fused_adamw_check.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "train_kernels.h"

namespace linear_ard::train::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;                                 // elements a thread loads at once
constexpr int64_t kBlockElems = int64_t{kThreads} * kVec * 4;  // elements a block updates

struct Batch {
  AdamwTensor t[kAdamwTensorsPerLaunch];
  int64_t block_start[kAdamwTensorsPerLaunch + 1];  // the first block of each tensor, then the total
  int count;
};

__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

// torch's adam_math (ATen/native/cuda/fused_adam_utils.cuh, ADAMW, no amsgrad) for one element,
// after the gradient's cast to fp32 and its scaling by a separate fp32 multiply.
__device__ __forceinline__ void adamw_element(float& param, float& exp_avg, float& exp_avg_sq, float grad,
                                              const AdamwHyper& h, float bias_correction1,
                                              float bias_correction2_sqrt) {
  if (h.scale_grad) grad = __fmul_rn(grad, h.grad_coef);
  if (h.weight_decay != 0) param -= h.lr * h.weight_decay * param;
  exp_avg = fmaf(h.beta1, exp_avg, fmaf(-h.beta1, grad, grad));
  exp_avg_sq = fmaf(h.beta2, exp_avg_sq, fmaf(-h.beta2, grad * grad, grad * grad));
  const float step_size = h.lr / bias_correction1;
  const float denom = (sqrtf(exp_avg_sq) / bias_correction2_sqrt) + h.eps;
  param -= step_size * exp_avg / denom;
}

template <typename G>
__global__ void __launch_bounds__(kThreads) adamw_held_kernel(const __grid_constant__ Batch b, const AdamwHyper h) {
  int i = 0;
  while (i + 1 < b.count && static_cast<int64_t>(blockIdx.x) >= b.block_start[i + 1]) ++i;
  const AdamwTensor& t = b.t[i];
  const int64_t begin = (static_cast<int64_t>(blockIdx.x) - b.block_start[i]) * kBlockElems;
  const int64_t end = begin + kBlockElems < t.numel ? begin + kBlockElems : t.numel;
  // torch's bias corrections, from the float step count, with the same pow and sqrt.
  const float step = *t.step;
  const float bias_correction1 = 1 - ::pow(h.beta1, step);
  const float bias_correction2_sqrt = sqrtf(1 - ::pow(h.beta2, step));
  const G* grad = static_cast<const G*>(t.grad);
  const bool vectorised = (reinterpret_cast<uintptr_t>(t.param) | reinterpret_cast<uintptr_t>(t.exp_avg) |
                           reinterpret_cast<uintptr_t>(t.exp_avg_sq)) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(grad) % (kVec * sizeof(G)) == 0;
  int64_t e = begin + threadIdx.x * kVec;
  if (vectorised) {
    for (; e + kVec <= end; e += kThreads * kVec) {
      float4 p = *reinterpret_cast<const float4*>(t.param + e);
      float4 m = *reinterpret_cast<const float4*>(t.exp_avg + e);
      float4 v = *reinterpret_cast<const float4*>(t.exp_avg_sq + e);
      struct alignas(kVec * sizeof(G)) Pack { G g[kVec]; };
      const Pack g = *reinterpret_cast<const Pack*>(grad + e);
      adamw_element(p.x, m.x, v.x, to_float(g.g[0]), h, bias_correction1, bias_correction2_sqrt);
      adamw_element(p.y, m.y, v.y, to_float(g.g[1]), h, bias_correction1, bias_correction2_sqrt);
      adamw_element(p.z, m.z, v.z, to_float(g.g[2]), h, bias_correction1, bias_correction2_sqrt);
      adamw_element(p.w, m.w, v.w, to_float(g.g[3]), h, bias_correction1, bias_correction2_sqrt);
      *reinterpret_cast<float4*>(t.param + e) = p;
      *reinterpret_cast<float4*>(t.exp_avg + e) = m;
      *reinterpret_cast<float4*>(t.exp_avg_sq + e) = v;
    }
  }
  // The elements a vector does not cover (an unaligned tensor, or a tail shorter than kVec): one at
  // a time, each thread the kVec elements at its position.
  for (; e < end; e += kThreads * kVec)
    for (int64_t k = e; k < e + kVec && k < end; ++k)
      adamw_element(t.param[k], t.exp_avg[k], t.exp_avg_sq[k], to_float(grad[k]), h, bias_correction1,
                    bias_correction2_sqrt);
}

template <typename G> void launch(const Batch& b, const AdamwHyper& h, void* stream) {
  const int64_t blocks = b.block_start[b.count];
  if (blocks == 0) return;
  adamw_held_kernel<G><<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(b, h);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("adamw_held_update: ") + cudaGetErrorString(e));
}

}  // namespace

void adamw_held_update(const AdamwTensor* tensors, int64_t count, GradDtype dt, const AdamwHyper& h, void* stream) {
  for (int64_t first = 0; first < count; first += kAdamwTensorsPerLaunch) {
    Batch b{};
    b.count = static_cast<int>(std::min<int64_t>(kAdamwTensorsPerLaunch, count - first));
    for (int k = 0; k < b.count; ++k) {
      b.t[k] = tensors[first + k];
      b.block_start[k + 1] = b.block_start[k] + (b.t[k].numel + kBlockElems - 1) / kBlockElems;
    }
    if (dt == GradDtype::kBFloat16)
      launch<__nv_bfloat16>(b, h, stream);
    else
      launch<__half>(b, h, stream);
  }
}

}  // namespace linear_ard::train::cuda

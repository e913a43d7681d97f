// Conversions and the launch shape (launch_rows) shared by the model layer's fused row kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "model_kernels.h"

namespace linear_ard::model::cuda {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// x rounded to T and back: what an unfused torch op's output in T holds (its math runs in fp32).
template <typename T> __device__ __forceinline__ float round_to(float x) { return to_float(from_float<T>(x)); }

// VEC consecutive elements, loaded and stored as one 16-byte access when VEC * sizeof(T) == 16.
template <typename T, int VEC> struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

// Elements per 16-byte access: 8 for bf16 / fp16, 4 for fp32.
template <typename T> constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// Whether every pointer is aligned for 16-byte accesses.
inline bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// Threads of a block that loops over `chunks` per row: a multiple of 32, at most 256.
inline int row_threads(int64_t chunks) {
  const int64_t t = (chunks + 31) / 32 * 32;
  return static_cast<int>(t < 256 ? (t > 32 ? t : 32) : 256);
}

inline void elementwise_check(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// How launch_rows lays a kernel over the rows of a [rows, width] tensor: `blocks` blocks (one per
// row, or fewer that stride over the rows), each of row_threads(width / VEC) threads, with
// `shared_bytes` of dynamic shared memory.
struct RowLaunch {
  int64_t blocks, width;
  bool vectorised;  // width a multiple of kVec<T> and every pointer aligned16
  void* stream;
  size_t shared_bytes = 0;
};

// Launches the kernel pick(std::integral_constant<int, VEC>) returns, VEC = kVec<T> (16-byte
// accesses) when l.vectorised, else 1 (one element per access), with `args`, then checks the
// launch, naming `what`. Nothing to do for no blocks.
template <typename T, typename Pick, typename... Args>
void launch_rows(const char* what, const RowLaunch& l, Pick pick, Args... args) {
  if (l.blocks == 0) return;
  const auto go = [&](auto vec) {
    const auto kernel = pick(vec);
    kernel<<<static_cast<unsigned>(l.blocks), row_threads(l.width / decltype(vec)::value), l.shared_bytes,
             static_cast<cudaStream_t>(l.stream)>>>(args...);
  };
  if (l.vectorised)
    go(std::integral_constant<int, kVec<T>>{});
  else
    go(std::integral_constant<int, 1>{});
  elementwise_check(what);
}

// Calls f(T{}) with the element type of `dt`.
template <typename F> void elementwise_dispatch(Dtype dt, F&& f) {
  switch (dt) {
    case Dtype::kFloat32: f(float{}); break;
    case Dtype::kBFloat16: f(__nv_bfloat16{}); break;
    case Dtype::kFloat16: f(__half{}); break;
  }
}

}  // namespace linear_ard::model::cuda

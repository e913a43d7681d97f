// Residual add fused into RMSNorm: h = x + r and y = rms_norm(h) * w in one kernel, and the
// gradients of x, r (one tensor: both are dh) and w in one kernel backward, where the composite
// runs an add, then the norm's forward, and backward the norm's gradient, an add of the residual
// path's gradient and the weight gradient's reduction. Statistics and gradients in fp32.
// One block per row forward; backward, blocks stride over the rows so that each keeps the weight
// gradient of its rows in shared memory. Each thread moves VEC consecutive features (16 bytes) when
// the width and the pointers allow it, else one, and owns the same features in every row.
#include "elementwise.cuh"

namespace linear_ard::model::cuda {
namespace {

// The sum of every thread's v over the block (blockDim.x a multiple of 32), returned to every
// thread; `scratch` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // a previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, int VEC> __device__ __forceinline__ Pack<T, VEC> load(const T* p) {
  return *reinterpret_cast<const Pack<T, VEC>*>(p);
}

// h = round(x + r); rstd = rsqrt(mean(h^2) + eps) and y = round(w h rstd) in fp32, rounded once
// (HF's LlamaRMSNorm rounds h rstd too, before the weight). The first pass writes h and sums its
// squares; the second reads the thread's own h back and writes y.
template <typename T, int VEC>
__global__ void add_rms_norm_forward_kernel(int64_t width, float eps, const T* x, const T* r, const T* w, T* h, T* y,
                                            float* rstd) {
  using P = Pack<T, VEC>;
  __shared__ float scratch[32];
  const int64_t base = blockIdx.x * width;
  float squares = 0.0f;
  for (int64_t col = threadIdx.x * VEC; col < width; col += blockDim.x * VEC) {
    const P a = load<T, VEC>(x + base + col), b = load<T, VEC>(r + base + col);
    P sum;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      sum.v[i] = from_float<T>(to_float(a.v[i]) + to_float(b.v[i]));
      const float v = to_float(sum.v[i]);
      squares += v * v;
    }
    *reinterpret_cast<P*>(h + base + col) = sum;
  }
  const float inv = rsqrtf(block_sum(squares, scratch) / static_cast<float>(width) + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = inv;
  for (int64_t col = threadIdx.x * VEC; col < width; col += blockDim.x * VEC) {
    const P s = load<T, VEC>(h + base + col), wv = load<T, VEC>(w + col);
    P out;
#pragma unroll
    for (int i = 0; i < VEC; ++i) out.v[i] = from_float<T>(to_float(wv.v[i]) * (to_float(s.v[i]) * inv));
    *reinterpret_cast<P*>(y + base + col) = out;
  }
}

// With g = dy w: dx = round(rstd (g - h c) + dh), c = rstd^2 mean(g h), dh the gradient reaching h by
// the residual path. dw += dy h rstd per row into shared memory (a thread's own features:
// no atomics), written as the block's row dw_partial[blockIdx.x] at the end; skipped without
// dw_partial.
template <typename T, int VEC>
__global__ void add_rms_norm_backward_kernel(int64_t rows, int64_t width, const T* dy, const T* dh, const T* h,
                                             const T* w, const float* rstd, T* dx, float* dw_partial) {
  using P = Pack<T, VEC>;
  extern __shared__ float dw[];  // [width] when dw_partial
  __shared__ float scratch[32];
  const int64_t start = threadIdx.x * VEC, stride = blockDim.x * VEC;
  for (int64_t col = start; dw_partial && col < width; col += stride)
    for (int i = 0; i < VEC; ++i) dw[col + i] = 0.0f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * width;
    const float inv = rstd[row];
    float dot = 0.0f;
    for (int64_t col = start; col < width; col += stride) {
      const P d = load<T, VEC>(dy + base + col), wv = load<T, VEC>(w + col), s = load<T, VEC>(h + base + col);
#pragma unroll
      for (int i = 0; i < VEC; ++i) dot += to_float(d.v[i]) * to_float(wv.v[i]) * to_float(s.v[i]);
    }
    const float c = block_sum(dot, scratch) / static_cast<float>(width) * inv * inv;
    for (int64_t col = start; col < width; col += stride) {
      const P d = load<T, VEC>(dy + base + col), wv = load<T, VEC>(w + col), s = load<T, VEC>(h + base + col);
      const P res = load<T, VEC>(dh + base + col);
      P out;
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float dyv = to_float(d.v[i]), hv = to_float(s.v[i]);
        out.v[i] = from_float<T>(inv * (dyv * to_float(wv.v[i]) - hv * c) + to_float(res.v[i]));
        if (dw_partial) dw[col + i] += dyv * (hv * inv);
      }
      *reinterpret_cast<P*>(dx + base + col) = out;
    }
  }
  for (int64_t col = start; dw_partial && col < width; col += stride)
    for (int i = 0; i < VEC; ++i) dw_partial[blockIdx.x * width + col + i] = dw[col + i];
}

}  // namespace

void add_rms_norm_forward(int64_t rows, int64_t width, float eps, Dtype dt, const void* x, const void* r,
                          const void* w, void* h, void* y, float* rstd, void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const RowLaunch l{rows, width, width % kVec<T> == 0 && aligned16({x, r, w, h, y}), stream};
    launch_rows<T>("add_rms_norm_forward", l,
                   [](auto vec) { return add_rms_norm_forward_kernel<T, decltype(vec)::value>; }, width, eps,
                   static_cast<const T*>(x), static_cast<const T*>(r), static_cast<const T*>(w), static_cast<T*>(h),
                   static_cast<T*>(y), rstd);
  });
}

void add_rms_norm_backward(int64_t rows, int64_t width, int64_t blocks, Dtype dt, const void* dy, const void* dh,
                           const void* h, const void* w, const float* rstd, void* dx, float* dw_partial,
                           void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const size_t shared = dw_partial ? static_cast<size_t>(width) * sizeof(float) : 0;
    const RowLaunch l{rows == 0 ? 0 : blocks, width, width % kVec<T> == 0 && aligned16({dy, dh, h, w, dx}), stream,
                      shared};
    launch_rows<T>("add_rms_norm_backward", l,
                   [](auto vec) { return add_rms_norm_backward_kernel<T, decltype(vec)::value>; }, rows, width,
                   static_cast<const T*>(dy), static_cast<const T*>(dh), static_cast<const T*>(h),
                   static_cast<const T*>(w), rstd, static_cast<T*>(dx), dw_partial);
  });
}

}  // namespace linear_ard::model::cuda

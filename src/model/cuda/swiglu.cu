// SwiGLU on one gate|up GEMM's output: silu(gate) * up forward, both halves' gradients backward,
// one kernel each way where the composite takes a split, silu, a multiply (and backward two
// multiplies, silu's backward and a concatenation). One block per row; each thread moves VEC
// consecutive features (16 bytes) when f and the pointers allow it, else one.
#include "elementwise.cuh"

namespace linear_ard::model::cuda {
namespace {

// torch's CUDA silu, x / (1 + exp(-x)) in fp32, rounded to T as its output is.
template <typename T> __device__ __forceinline__ float silu_rounded(float x) {
  return round_to<T>(x / (1.0f + expf(-x)));
}

template <typename T, int VEC>
__global__ void swiglu_forward_kernel(int64_t f, const T* gate_up, T* h) {
  using P = Pack<T, VEC>;
  const T* row = gate_up + blockIdx.x * 2 * f;
  for (int64_t col = threadIdx.x * VEC; col < f; col += blockDim.x * VEC) {
    const P g = *reinterpret_cast<const P*>(row + col), u = *reinterpret_cast<const P*>(row + f + col);
    P out;
#pragma unroll
    for (int i = 0; i < VEC; ++i)
      out.v[i] = from_float<T>(__fmul_rn(silu_rounded<T>(to_float(g.v[i])), to_float(u.v[i])));
    *reinterpret_cast<P*>(h + blockIdx.x * f + col) = out;
  }
}

// dup = round(dh silu(g)); dsilu = round(dh up); dgate = dsilu * sigmoid(g) (1 + g (1 - sigmoid(g)))
// as torch's silu_backward writes it.
template <typename T, int VEC>
__global__ void swiglu_backward_kernel(int64_t f, const T* gate_up, const T* dh, T* dgate_up) {
  using P = Pack<T, VEC>;
  const T* row = gate_up + blockIdx.x * 2 * f;
  T* drow = dgate_up + blockIdx.x * 2 * f;
  for (int64_t col = threadIdx.x * VEC; col < f; col += blockDim.x * VEC) {
    const P g = *reinterpret_cast<const P*>(row + col), u = *reinterpret_cast<const P*>(row + f + col);
    const P d = *reinterpret_cast<const P*>(dh + blockIdx.x * f + col);
    P dg, du;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float x = to_float(g.v[i]), dy = to_float(d.v[i]);
      const float dsilu = round_to<T>(__fmul_rn(dy, to_float(u.v[i])));
      const float sigmoid = 1.0f / (1.0f + expf(-x));
      dg.v[i] = from_float<T>(dsilu * sigmoid * (1.0f + x * (1.0f - sigmoid)));
      du.v[i] = from_float<T>(__fmul_rn(dy, silu_rounded<T>(x)));
    }
    *reinterpret_cast<P*>(drow + col) = dg;
    *reinterpret_cast<P*>(drow + f + col) = du;
  }
}

}  // namespace

void swiglu_forward(int64_t rows, int64_t f, Dtype dt, const void* gate_up, void* h, void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const RowLaunch l{rows, f, f % kVec<T> == 0 && aligned16({gate_up, h}), stream};
    launch_rows<T>("swiglu_forward", l, [](auto vec) { return swiglu_forward_kernel<T, decltype(vec)::value>; }, f,
                   static_cast<const T*>(gate_up), static_cast<T*>(h));
  });
}

void swiglu_backward(int64_t rows, int64_t f, Dtype dt, const void* gate_up, const void* dh, void* dgate_up,
                     void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const RowLaunch l{rows, f, f % kVec<T> == 0 && aligned16({gate_up, dh, dgate_up}), stream};
    launch_rows<T>("swiglu_backward", l, [](auto vec) { return swiglu_backward_kernel<T, decltype(vec)::value>; }, f,
                   static_cast<const T*>(gate_up), static_cast<const T*>(dh), static_cast<T*>(dgate_up));
  });
}

}  // namespace linear_ard::model::cuda

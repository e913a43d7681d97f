// Raw-pointer entry points of the model layer's fused CUDA kernels (no libtorch here, so nvcc
// compiles them without torch's headers). The torch glue and the autograd rules are in
// src/model/fused_rope_qkv.cpp, fused_swiglu.cpp and fused_add_rms_norm.cpp; the RoPE and SwiGLU
// kernels reproduce, rounding for rounding, the composite torch ops they replace (see those files);
// the add + RMSNorm kernels compute in fp32 and round each output once.
#pragma once

#include <cstdint>

namespace linear_ard::model::cuda {

enum class Dtype { kFloat32, kBFloat16, kFloat16 };

// One QKV GEMM's output [rows = B * n, (heads + 2 kv_heads) * head_dim], row-major, split into
// q [rows, heads * head_dim], k and v [rows, kv_heads * head_dim], with RoPE on q and k's first
// `rot` features: out[j] = x[j] cos[j] + x[(j + rot/2) % rot] sin_signed[j]. cos / sin_signed are
// [B or 1, n, rot] (`cos_batched`: B), in the activations' dtype.
struct RopeQkvShape {
  int64_t rows, n;
  int heads, kv_heads, head_dim, rot;
  bool cos_batched;
};
void rope_qkv_forward(const RopeQkvShape& s, Dtype dt, const void* qkv, const void* cos,
                      const void* sin_signed, void* q, void* k, void* v, void* stream);
// The gradient: dq, dk, dv laid out as q, k, v above -> dqkv [rows, (heads + 2 kv_heads) * head_dim].
void rope_qkv_backward(const RopeQkvShape& s, Dtype dt, const void* dq, const void* dk, const void* dv,
                       const void* cos, const void* sin_signed, void* dqkv, void* stream);

// SwiGLU on one gate|up GEMM's output [rows, 2 f]: h [rows, f] = silu(gate) * up, and its gradient
// dgate_up [rows, 2 f] from dh [rows, f].
void swiglu_forward(int64_t rows, int64_t f, Dtype dt, const void* gate_up, void* h, void* stream);
void swiglu_backward(int64_t rows, int64_t f, Dtype dt, const void* gate_up, const void* dh,
                     void* dgate_up, void* stream);

// The residual add fused into RMSNorm over [rows, width] rows in one dtype: h = x + r and
// y = rms_norm(h) * w (w [width]), rstd [rows] fp32 kept for backward. Backward, from dy and dh (the
// gradient reaching h by the residual path): dx [rows, width], the gradient of x and of r, and, when
// dw_partial is given, the weight's gradient summed over each of `blocks` blocks' rows in
// dw_partial [blocks, width] fp32 (the caller sums it; width * 4 bytes of shared memory per block).
void add_rms_norm_forward(int64_t rows, int64_t width, float eps, Dtype dt, const void* x, const void* r,
                          const void* w, void* h, void* y, float* rstd, void* stream);
void add_rms_norm_backward(int64_t rows, int64_t width, int64_t blocks, Dtype dt, const void* dy, const void* dh,
                           const void* h, const void* w, const float* rstd, void* dx, float* dw_partial,
                           void* stream);

}  // namespace linear_ard::model::cuda

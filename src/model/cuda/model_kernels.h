// Raw-pointer entry points of the model layer's fused CUDA kernels (no libtorch here, so nvcc
// compiles them without torch's headers). The torch glue and the autograd rules are in
// src/model/fused_rope_qkv.cpp and src/model/fused_swiglu.cpp; each kernel reproduces, rounding
// for rounding, the composite torch ops it replaces (see those files).
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

}  // namespace linear_ard::model::cuda

// q/k/v split of one QKV GEMM's output with RoPE on q and k: one kernel forward, one backward,
// where the composite takes a split, two multiplies, a roll and an add each way (rope.cpp).
// One block per row of qkv; each thread moves VEC consecutive features of one head (16 bytes) when
// the head and half-rotary dims allow it, else one.
#include "elementwise.cuh"

namespace linear_ard::model::cuda {
namespace {

// Where a chunk of VEC features starting at column `col` of a qkv row lives.
struct RopeChunk {
  int j, partner;  // first feature in its head; first feature of its rotation partner, or -1
  int region;      // 0 q, 1 k, 2 v
  int offset;      // column in q, k or v
};

__device__ __forceinline__ RopeChunk rope_chunk(const RopeQkvShape& s, int col) {
  RopeChunk c;
  const int qw = s.heads * s.head_dim, kw = s.kv_heads * s.head_dim;
  c.j = col % s.head_dim;
  c.region = col < qw ? 0 : (col < qw + kw ? 1 : 2);
  c.offset = col - (c.region == 0 ? 0 : (c.region == 1 ? qw : qw + kw));
  const int half = s.rot / 2;
  c.partner = (c.region < 2 && c.j < s.rot) ? (c.j < half ? c.j + half : c.j - half) : -1;
  return c;
}

// Features per qkv row.
__host__ __device__ __forceinline__ int rope_width(const RopeQkvShape& s) {
  return (s.heads + 2 * s.kv_heads) * s.head_dim;
}

__device__ __forceinline__ int64_t region_width(const RopeQkvShape& s, int region) {
  return static_cast<int64_t>(region == 0 ? s.heads : s.kv_heads) * s.head_dim;
}

// out = round(round(x c) + round(x_partner s)): the composite's x * cos + roll(x) * sin_signed,
// each product rounded to T as its own op's output is; __fmul_rn / __fadd_rn keep nvcc from
// contracting them into one FMA (which would round once, unlike torch's separate ops in fp32).
template <typename T, int VEC>
__global__ void rope_qkv_forward_kernel(RopeQkvShape s, const T* qkv, const T* cos, const T* sin, T* q, T* k, T* v) {
  using P = Pack<T, VEC>;
  const int64_t row = blockIdx.x;
  const int width = rope_width(s);
  const T* x = qkv + row * width;
  const int64_t cs = (s.cos_batched ? row : row % s.n) * s.rot;
  T* outs[3] = {q, k, v};
  for (int col = threadIdx.x * VEC; col < width; col += blockDim.x * VEC) {
    const RopeChunk c = rope_chunk(s, col);
    P val = *reinterpret_cast<const P*>(x + col);
    if (c.partner >= 0) {
      const P xp = *reinterpret_cast<const P*>(x + col - c.j + c.partner);
      const P cv = *reinterpret_cast<const P*>(cos + cs + c.j), sv = *reinterpret_cast<const P*>(sin + cs + c.j);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float a = round_to<T>(__fmul_rn(to_float(val.v[i]), to_float(cv.v[i])));
        const float b = round_to<T>(__fmul_rn(to_float(xp.v[i]), to_float(sv.v[i])));
        val.v[i] = from_float<T>(__fadd_rn(a, b));
      }
    }
    *reinterpret_cast<P*>(outs[c.region] + row * region_width(s, c.region) + c.offset) = val;
  }
}

// dx[j] = round(round(g[j] c[j]) + round(g[p] s[p])), p = the partner of j: the composite's
// gradient (mul's dout * cos, roll's inverse of round(dout * sin), summed by autograd).
template <typename T, int VEC>
__global__ void rope_qkv_backward_kernel(RopeQkvShape s, const T* dq, const T* dk, const T* dv, const T* cos,
                                         const T* sin, T* dqkv) {
  using P = Pack<T, VEC>;
  const int64_t row = blockIdx.x;
  const int width = rope_width(s);
  const int64_t cs = (s.cos_batched ? row : row % s.n) * s.rot;
  const T* grads[3] = {dq, dk, dv};
  for (int col = threadIdx.x * VEC; col < width; col += blockDim.x * VEC) {
    const RopeChunk c = rope_chunk(s, col);
    const T* g = grads[c.region] + row * region_width(s, c.region);
    P val = *reinterpret_cast<const P*>(g + c.offset);
    if (c.partner >= 0) {
      const P gp = *reinterpret_cast<const P*>(g + c.offset - c.j + c.partner);
      const P cv = *reinterpret_cast<const P*>(cos + cs + c.j), sv = *reinterpret_cast<const P*>(sin + cs + c.partner);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float a = round_to<T>(__fmul_rn(to_float(val.v[i]), to_float(cv.v[i])));
        const float b = round_to<T>(__fmul_rn(to_float(gp.v[i]), to_float(sv.v[i])));
        val.v[i] = from_float<T>(__fadd_rn(a, b));
      }
    }
    *reinterpret_cast<P*>(dqkv + row * width + col) = val;
  }
}

// 16-byte chunks need every chunk inside one head and one rotary half.
template <typename T> bool rope_vectorised(const RopeQkvShape& s, std::initializer_list<const void*> ptrs) {
  return s.head_dim % kVec<T> == 0 && (s.rot / 2) % kVec<T> == 0 && aligned16(ptrs);
}

}  // namespace

void rope_qkv_forward(const RopeQkvShape& s, Dtype dt, const void* qkv, const void* cos, const void* sin_signed,
                      void* q, void* k, void* v, void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const RowLaunch l{s.rows, rope_width(s), rope_vectorised<T>(s, {qkv, cos, sin_signed, q, k, v}), stream};
    launch_rows<T>("rope_qkv_forward", l, [](auto vec) { return rope_qkv_forward_kernel<T, decltype(vec)::value>; }, s,
                   static_cast<const T*>(qkv), static_cast<const T*>(cos), static_cast<const T*>(sin_signed),
                   static_cast<T*>(q), static_cast<T*>(k), static_cast<T*>(v));
  });
}

void rope_qkv_backward(const RopeQkvShape& s, Dtype dt, const void* dq, const void* dk, const void* dv,
                       const void* cos, const void* sin_signed, void* dqkv, void* stream) {
  elementwise_dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const RowLaunch l{s.rows, rope_width(s), rope_vectorised<T>(s, {dq, dk, dv, cos, sin_signed, dqkv}), stream};
    launch_rows<T>("rope_qkv_backward", l, [](auto vec) { return rope_qkv_backward_kernel<T, decltype(vec)::value>; },
                   s, static_cast<const T*>(dq), static_cast<const T*>(dk), static_cast<const T*>(dv),
                   static_cast<const T*>(cos), static_cast<const T*>(sin_signed), static_cast<T*>(dqkv));
  });
}

}  // namespace linear_ard::model::cuda

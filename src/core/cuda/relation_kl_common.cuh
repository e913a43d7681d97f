// Device helpers shared by the relation-KL kernels: tensor-core fragments, cp.async tile loads,
// log2-domain constants and the per-(batch, head) addressing of RelationKLParams.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams, RelationSide, DType

namespace linear_ard {
namespace cuda {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Throws std::runtime_error with the CUDA error string; used after every launch and API call.
inline void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("linear_ard CUDA: ") + what + ": " + cudaGetErrorString(err));
  }
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// Two fp32 values as one 32-bit register of two 16-bit elements (low half = first), the A-operand
// element pair of mma.sync.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// D(16x8, fp32) += A(16x16, row) * B(16x8, col). Fragment layout (g = lane/4, t = lane%4):
// a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); b0 (k 2t..2t+1, n g),
// b1 (k 2t+8.., n g); c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1).
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__half>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 16-bit matrices; lane l gives the address of one row (lanes 8q..8q+7: matrix q).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

// One 16x8 mma C fragment as 4 consecutive columns of one row per lane: lanes tq, tq^1 of a quad
// swap half their values, so an even lane holds row r, columns 2tq..2tq+3 and an odd lane row
// r + 8, columns 2(tq-1)..2tq+1. Every lane of the warp must call it (shuffles).
__device__ __forceinline__ float4 frag_row4(const float (&c)[4]) {
  const bool odd = threadIdx.x & 1;
  const float s0 = __shfl_xor_sync(0xffffffffu, odd ? c[0] : c[2], 1);
  const float s1 = __shfl_xor_sync(0xffffffffu, odd ? c[1] : c[3], 1);
  return odd ? make_float4(s0, s1, c[2], c[3]) : make_float4(c[0], c[1], s0, s1);
}

// Adds one 16x8 fp32 mma C fragment (c0,c1: row r, columns 2tq, 2tq+1 of the tile; c2,c3: row
// r + 8) to rows [row, row + 8] x columns [col0, col0 + 8) of a row-major fp32 matrix with atomics;
// rows >= nrows and columns >= ncols are skipped. `vec4`: 16-byte aligned rows and ncols % 4 == 0.
// On sm_90 the lanes tq, tq^1 swap half their values so each holds 4 consecutive columns of one
// row, and one 16-byte red.global.add.v4.f32 replaces four scalar atomics (a quarter of the L2
// atomic operations). Every lane of the warp must call it (the swap is a shuffle).
__device__ __forceinline__ void atomic_add_frag(float* m, int64_t ld, int64_t row, int64_t nrows, int col0,
                                                int ncols, const float (&c)[4], bool vec4) {
  const int tq = threadIdx.x % 4;
#if __CUDA_ARCH__ >= 900
  if (vec4) {
    const float4 v = frag_row4(c);
    const int64_t r = row + (tq & 1) * 8;
    const int col = col0 + 2 * (tq & ~1);
    if (r < nrows && col < ncols) atomicAdd(reinterpret_cast<float4*>(m + r * ld + col), v);
    return;
  }
#endif
  const int col = col0 + 2 * tq;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row + 8 * h >= nrows) continue;
    float* dst = m + (row + 8 * h) * ld + col;
    if (col < ncols) atomicAdd(dst, c[2 * h]);
    if (col + 1 < ncols) atomicAdd(dst + 1, c[2 * h + 1]);
  }
}

// 16-byte global->shared copy that bypasses registers; src_bytes = 0 writes zeros (padding).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// Loads rows [row0, row0 + ROWS) x columns [0, D) of a [n, d] matrix (row stride `stride`
// elements) into shared memory with row pitch D + 8 elements (the 16-byte pad puts the 8 rows an
// ldmatrix reads in 8 different bank groups). Rows >= n and columns >= d are zero-filled, so the
// padded head-dim bucket contributes nothing to the dot products. `vec`: 16-byte aligned rows and
// d % 8 == 0, copied with cp.async; otherwise element by element (strided or odd-sized inputs).
template <typename T, int ROWS, int D, int NTHREADS>
__device__ __forceinline__ void load_tile(T* smem, const T* g, int64_t stride, int64_t row0, int64_t n, int d,
                                          bool vec) {
  constexpr int kPitch = D + 8;
  if (vec) {
    constexpr int kChunks = ROWS * (D / 8);
    for (int c = threadIdx.x; c < kChunks; c += NTHREADS) {
      const int r = c / (D / 8), col = (c % (D / 8)) * 8;
      const bool ok = row0 + r < n && col < d;
      const T* src = ok ? g + (row0 + r) * stride + col : g;
      cp_async16(smem + r * kPitch + col, src, ok ? 16 : 0);
    }
  } else {
    for (int e = threadIdx.x; e < ROWS * D; e += NTHREADS) {
      const int r = e / D, col = e % D;
      const bool ok = row0 + r < n && col < d;
      smem[r * kPitch + col] = ok ? g[(row0 + r) * stride + col] : T(0.f);
    }
  }
}

// Core-matrix tile layout ("interleave", no swizzle, K-major) of a [rows x D] 16-bit tile:
// element (r, c) lives at (r / 8) * 8D + (c / 8) * 64 + (r % 8) * 8 + c % 8. Every 8 x 8 block
// (one core matrix: 8 rows of 16 bytes) is 128 contiguous bytes, so ldmatrix reads of it are
// conflict-free and a wgmma descriptor describes it with LBO = 128 bytes (next 8 columns) and
// SBO = 16 D bytes (next 8 rows).
template <int D>
__host__ __device__ constexpr int cm_off(int r, int c) {
  return (r >> 3) * (8 * D) + (c >> 3) * 64 + (r & 7) * 8 + (c & 7);
}

// load_tile of relation_kl_common.cuh into the core-matrix layout. With 16-byte chunks numbered
// c = (row group) * D + (column chunk) * 8 + row % 8, chunk c lands at element 8c: the CTA's
// cp.async stores are contiguous, and each 8 consecutive threads read 8 rows x 16 bytes.
template <typename T, int ROWS, int D, int NTHREADS>
__device__ __forceinline__ void load_tile_cm(T* smem, const T* g, int64_t stride, int64_t row0, int64_t n,
                                             int d, bool vec) {
  if (vec) {
    constexpr int kChunks = ROWS * (D / 8);
    for (int c = threadIdx.x; c < kChunks; c += NTHREADS) {
      const int q = c % D, r = (c / D) * 8 + (q & 7), col = (q >> 3) * 8;
      const bool ok = row0 + r < n && col < d;
      const T* src = ok ? g + (row0 + r) * stride + col : g;
      cp_async16(smem + 8 * c, src, ok ? 16 : 0);
    }
  } else {
    for (int e = threadIdx.x; e < ROWS * D; e += NTHREADS) {
      const int r = e / D, col = e % D;
      const bool ok = row0 + r < n && col < d;
      smem[cm_off<D>(r, col)] = ok ? g[(row0 + r) * stride + col] : T(0.f);
    }
  }
}

// Repeated loads of [ROWS x D] tiles (rows row0.., every column) of one [n x d] matrix by a CTA of
// NTHREADS threads, into the row-pitch layout of load_tile (kCoreMatrix = false) or the core-matrix
// layout of load_tile_cm (true), with each thread's addressing worked out once. Where every thread
// keeps one 16-byte column chunk over the whole tile (kFast: D = 64 / 128 / 256 with 128 or 256
// threads), a tile costs each thread ROWS * D / 8 / NTHREADS cp.async, one 64-bit multiply and a
// row bound check per chunk, instead of the index arithmetic of the general loops (which
// dominated the kernels' integer instructions). Global reads stay coalesced and shared-memory
// writes conflict-free: the chunk order is load_tile's / load_tile_cm's. Elsewhere (d % 8 != 0,
// unaligned rows, D = 96) it runs load_tile / load_tile_cm.
template <typename T, int ROWS, int D, int NTHREADS, bool kCoreMatrix>
struct TileLoader {
  static constexpr int kChunksPerRow = D / 8;
  static constexpr bool kFast =
      kCoreMatrix ? (NTHREADS % D == 0 && ROWS % (NTHREADS / D * 8) == 0)
                  : (NTHREADS % kChunksPerRow == 0 && ROWS % (NTHREADS / kChunksPerRow) == 0);
  // Rows one pass of the CTA covers, and the elements between a thread's chunks of two passes.
  static constexpr int kRowsPerPass = !kFast ? 1 : kCoreMatrix ? NTHREADS / D * 8 : NTHREADS / kChunksPerRow;
  static constexpr int kPasses = ROWS / kRowsPerPass;
  static constexpr int kSmemPerPass = kCoreMatrix ? 8 * NTHREADS : kRowsPerPass * (D + 8);

  const T* g;
  int64_t stride;
  int64_t n;
  int d;
  bool vec;
  int row;       // this thread's first row of a tile
  int col;       // its column chunk (elements)
  int smem_off;  // its first chunk's element offset in the tile

  __device__ __forceinline__ TileLoader(const T* g_, int64_t stride_, int64_t n_, int d_, bool vec_)
      : g(g_), stride(stride_), n(n_), d(d_), vec(vec_) {
    const int tid = threadIdx.x;
    if constexpr (kCoreMatrix) {
      const int q = tid % D;
      row = (tid / D) * 8 + (q & 7);
      col = (q >> 3) * 8;
      smem_off = 8 * tid;
    } else {
      row = tid / kChunksPerRow;
      col = (tid % kChunksPerRow) * 8;
      smem_off = row * (D + 8) + col;
    }
  }

  // Issues the cp.async (or plain copies) of rows [row0, row0 + ROWS); rows >= n and columns >= d
  // become zeros.
  __device__ __forceinline__ void load(T* smem, int64_t row0) const {
    if constexpr (kFast) {
      if (vec) {
        const int64_t first = row0 + row;
        // Rows of the tile left from this thread's first one (0 when none or the column is padding).
        const int left = col < d ? static_cast<int>(max(int64_t(0), min(n - first, int64_t(ROWS)))) : 0;
        const T* src = g + first * stride + col;
#pragma unroll
        for (int i = 0; i < kPasses; ++i) {
          const bool ok = i * kRowsPerPass < left;
          cp_async16(smem + smem_off + i * kSmemPerPass, ok ? src : g, ok ? 16 : 0);
          src += kRowsPerPass * stride;
        }
        return;
      }
    }
    if constexpr (kCoreMatrix) {
      load_tile_cm<T, ROWS, D, NTHREADS>(smem, g, stride, row0, n, d, vec);
    } else {
      load_tile<T, ROWS, D, NTHREADS>(smem, g, stride, row0, n, d, vec);
    }
  }
};

// Rows that see exactly one key have R_s = R_t = 1, so their dZ is exactly 0. The backward kernels
// recompute P = exp2(z - lse2) from the stored LSEs, which leaves rounding there (the backward's
// logits come from other MMAs than the forward's, the LSE makes a round trip through the natural
// log), so every backward (SIMT and tensor-core) zeroes such a row's upstream gradient instead, where
// it reads the row's statistics. A batch item's first and second visible keys (n where there are
// fewer) say which rows those are: causal, the rows in [first, second); otherwise all of them when
// only one key is visible. Without a key mask that is row 0 (causal) or every row of n = 1.
struct SingleKeyRows {
  int64_t first;
  int64_t second;
  __device__ __forceinline__ bool contains(bool causal, int64_t row, int64_t n) const {
    return causal ? row >= first && row < second : first < n && second >= n;
  }
};

// SingleKeyRows of a batch item, found by one whole warp (every lane gets the result): 32 mask
// bytes a step, stopping at the second visible key, so it costs about the leading padding; without
// a key mask nothing is read.
__device__ __forceinline__ SingleKeyRows single_key_rows(const uint8_t* kmask, int64_t n) {
  if (kmask == nullptr) return {0, 1};
  SingleKeyRows r{n, n};
  for (int64_t base = 0; base < n && r.second == n; base += 32) {
    const int64_t key = base + threadIdx.x % 32;
    unsigned bits = __ballot_sync(0xffffffffu, key < n && kmask[key] != 0);
    if (bits != 0 && r.first == n) {
      r.first = base + __ffs(bits) - 1;
      bits &= bits - 1;
    }
    if (bits != 0) r.second = base + __ffs(bits) - 1;
  }
  return r;
}

// One model's X and Y base pointers for batch b, X head h (Y head by the GQA rule).
template <typename T>
struct SidePtrs {
  const T* x;
  const T* y;
};
template <typename T>
__device__ __forceinline__ SidePtrs<T> side_ptrs(const RelationSide& s, int heads, int64_t b, int h) {
  const int hy = h / (heads / s.heads_y);
  return {static_cast<const T*>(s.x) + b * s.x_batch_stride + h * s.x_head_stride,
          static_cast<const T*>(s.y) + b * s.y_batch_stride + hy * s.y_head_stride};
}

// Where a tensor-core kernel's CTA works. Grid (tiles, heads, B), started in linear block order,
// read as groups of `group` (batch, head) pairs (RelationKLParams::cta_head_group), each
// group's CTAs tile rank first: rank 0 of every pair of the group, then rank 1, ... The kernels map
// rank 0 to their heaviest tile of a causal relation (the forward's last row tile, the backward's
// first key tile), so the longest CTAs start first and the launch ends on short ones, while the
// pairs of a group share the L2 (their key or row tiles are read by the group's CTAs together).
// group = 1: one pair's tiles after another, rank = blockIdx.x.
struct CtaPlace {
  int64_t rank;
  int head;
  int64_t batch;
};
__device__ __forceinline__ CtaPlace cta_place(int group) {
  const int64_t tiles = gridDim.x, pairs = int64_t(gridDim.y) * gridDim.z;
  const int64_t linear = blockIdx.x + tiles * (blockIdx.y + int64_t(gridDim.y) * blockIdx.z);
  const int64_t g = max(int64_t(1), min(int64_t(group), pairs));  // 0 (unresolved) reads as 1
  const int64_t first = linear / (g * tiles) * g;  // the group's first pair
  const int64_t size = min(g, pairs - first);      // the last group may be short
  const int64_t within = linear - first * tiles;
  const int64_t pair = first + within % size;
  return {within / size, static_cast<int>(pair % gridDim.y), pair / gridDim.y};
}

// ------------------------------------------------------------------------------------------------
// host helpers

// True when every row of both X and Y of this side starts on a 16-byte boundary and d % 8 == 0:
// the tensor-core kernels then copy tiles with cp.async.
inline bool side_is_vec(const RelationSide& s, size_t elem) {
  auto aligned = [&](const void* p, int64_t bs, int64_t hs, int64_t rs) {
    const int64_t q = 16 / static_cast<int64_t>(elem);
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && bs % q == 0 && hs % q == 0 && rs % q == 0;
  };
  return s.head_dim % 8 == 0 && aligned(s.x, s.x_batch_stride, s.x_head_stride, s.x_row_stride) &&
         aligned(s.y, s.y_batch_stride, s.y_head_stride, s.y_row_stride);
}

}  // namespace cuda
}  // namespace linear_ard

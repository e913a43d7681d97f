// What the two tensor-core backward kernels (relation_kl_bwd.cuh: mma.sync; relation_kl_bwd_wgmma.cuh:
// warpgroup MMA, sm_90a) share: the CTA's prologue (its place, keys and shared memory), the store of
// dY, the single-key rows, and the launchers (those of the deterministic backward's row-parallel dX
// kernels too, relation_kl_bwd_rows*.cuh); and the staging of dZ^T for the mma.sync dX GEMM (relation_kl_bwd.cuh and
// dev/cuda's frozen wgmma versions 3-5; the library's wgmma kernel stages dZ^T in the core-matrix layout).
#pragma once

#include <string>

#include "relation_kl_common.cuh"  // defines: kLog2e, atomic_add_frag, cuda_check, single_key_rows, mma16816

// The prologue of a backward CTA, as declarations in the kernel's scope (needs `p`, `smem_raw` and
// T, BN keys per CTA, BM rows per stage, tile pitch P and dZ^T pitch ZP):
//   sYs, sYt [BN][P]; sX [stage][model][BM][P]; sZ = dZ^T [buffer][BN][ZP]; sStat [stage][lse2_s,
//   lse2_t, g*scale_s][BM] (shared memory);
//   warp, lane, g = lane / 4, tq = lane % 4; cta (cta_place), hy (student Y head), b (batch item), n,
//   j0 (first key), group (X heads per student Y head), ds, dt, cs, ct (scales in log2 units), kmask
//   (this batch item's key mask or nullptr);
//   key_lo: this thread's keys in the S^T accumulators are key_lo and key_lo + 8 (rows g, g + 8 of
//   its warp's 16), key_ok[r]: key key_lo + 8r exists and is visible; any_hidden_key: some key of
//   the CTA is padding or past n.
// A macro, not a function returning a struct: the kernels' generated code stays what it was (a
// struct moved the prologue's instructions and changed the mma.sync kernel's registers, 248 -> 242
// at D = 128; CHANGELOG.md, 2026-11-25).
#define LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP)                                                       \
  T* sYs = reinterpret_cast<T*>(smem_raw);                                                                \
  T* sYt = sYs + BN * P;                                                                                   \
  T* sX = sYt + BN * P;                                                                                    \
  T* sZ = sX + 2 * 2 * BM * P;                                                                             \
  float* sStat = reinterpret_cast<float*>(sZ + 2 * BN * ZP);                                               \
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;                \
  const CtaPlace cta = cta_place(p.cta_head_group); /* heaviest causal key tiles first */               \
  const int hy = cta.head;                                                                                 \
  const int64_t b = cta.batch, n = p.seq_len;                                                              \
  const int64_t j0 = cta.rank * BN;                                                                        \
  const int group = p.heads / p.student.heads_y;                                                           \
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;                                              \
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;                                \
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;                  \
  const int64_t key_lo = j0 + warp * 16 + g;                                                               \
  bool key_ok[2];                                                                                          \
  _Pragma("unroll") for (int r = 0; r < 2; ++r) {                                                          \
    const int64_t key = key_lo + 8 * r;                                                                    \
    key_ok[r] = key < n && (kmask == nullptr || kmask[key]);                                               \
  }                                                                                                        \
  const bool any_hidden_key = kmask != nullptr || j0 + BN > n

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// Zeroes N mma C fragments (an accumulator before its first k-step).
template <int N>
__device__ __forceinline__ void zero_frags(float (&c)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[i][e] = 0.f;
}

// A warp's ldmatrix addresses (elements) in a row-major tile of pitch P, for the mma.sync GEMMs of
// both backwards (the column-parallel kernel: its own tile = Y, the streamed tile = X; the
// row-parallel one the other way round).
template <int P>
struct BwdMmaOffsets {
  int a, b, bt;
  __device__ __forceinline__ BwdMmaOffsets(int warp, int lane)
      // A fragment (16 rows of the warp's own tile): rows l%16, k-chunk l/16.
      : a((warp * 16 + lane % 16) * P + (lane / 16) * 8),
        // B fragment, non-transposed (n = rows of the streamed tile, k = d): rows (l/16)*8 + l%8,
        // chunk (l/8)%2.
        b(((lane / 16) * 8 + lane % 8) * P + ((lane / 8) % 2) * 8),
        // B fragment, transposed (k = rows of a [k][d] tile, n = d): rows l%8 + ((l/8)%2)*8, chunk l/16.
        bt((lane % 8 + ((lane / 8) % 2) * 8) * P + (lane / 16) * 8) {}
};

// Both models' logits of a warp's 16 rows of its own tiles (A: sAs, sAt) against the 8 RT rows of the
// streamed stage (B: sBs, sBt), over D / 16 k-steps by mma.sync: zs, zt as RT C fragments (16 x 8),
// overwritten. The A fragments are read from shared memory at every k-step (in registers they would
// push the backwards past 255 registers, next to their 16 x D accumulator).
template <typename T, int D, int P, int RT>
__device__ __forceinline__ void bwd_mma_logits(float (&zs)[RT][4], float (&zt)[RT][4], const T* sAs, const T* sAt,
                                               const T* sBs, const T* sBt, const BwdMmaOffsets<P>& off) {
#pragma unroll
  for (int i = 0; i < RT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) zs[i][e] = zt[i][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t as[4], at[4];
    ldmatrix_x4(as, sAs + off.a + kk * 16);
    ldmatrix_x4(at, sAt + off.a + kk * 16);
#pragma unroll
    for (int np = 0; np < RT / 2; ++np) {
      uint32_t bs[4], bt[4];
      ldmatrix_x4(bs, sBs + off.b + np * 16 * P + kk * 16);
      ldmatrix_x4(bt, sBt + off.b + np * 16 * P + kk * 16);
      mma16816<T>(zs[2 * np], as, bs[0], bs[1]);
      mma16816<T>(zs[2 * np + 1], as, bs[2], bs[3]);
      mma16816<T>(zt[2 * np], at, bt[0], bt[1]);
      mma16816<T>(zt[2 * np + 1], at, bt[2], bt[3]);
    }
  }
}

// acc += dZ B for a warp: A = dZ straight from its RT C fragments (two 8-column n-tiles make one
// 16-wide k-step, k = the streamed tile's rows), B = the streamed tile sB [8 RT][D] read transposed;
// stage(kk, a) sees each k-step's A fragment (the column-parallel kernel stages dZ^T from it).
template <typename T, int P, int DT, int RT, typename Stage>
__device__ __forceinline__ void bwd_mma_grad(float (&acc)[DT][4], const float (&zs)[RT][4], const T* sB,
                                             const BwdMmaOffsets<P>& off, Stage&& stage) {
#pragma unroll
  for (int kk = 0; kk < RT / 2; ++kk) {
    const uint32_t a[4] = {pack2<T>(zs[2 * kk][0], zs[2 * kk][1]), pack2<T>(zs[2 * kk][2], zs[2 * kk][3]),
                           pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]),
                           pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3])};
#pragma unroll
    for (int np = 0; np < DT / 2; ++np) {
      uint32_t bf[4];
      ldmatrix_x4_trans(bf, sB + off.bt + kk * 16 * P + np * 16);
      mma16816<T>(acc[2 * np], a, bf[0], bf[1]);
      mma16816<T>(acc[2 * np + 1], a, bf[2], bf[3]);
    }
    stage(kk, a);
  }
}

// Writes a warp's 16 x 16 block of dZ^T (the packed A fragment `a`: key rows g, g + 8, row columns
// 2tq, 2tq + 1 of both 8-wide n-tiles) at `zrow` = its element (g, 2tq) in the dZ^T buffer (pitch
// ZP), for the dX GEMM.
template <int ZP, typename T>
__device__ __forceinline__ void bwd_stage_dz(T* zrow, const uint32_t (&a)[4]) {
  *reinterpret_cast<uint32_t*>(zrow) = a[0];
  *reinterpret_cast<uint32_t*>(zrow + 8 * ZP) = a[1];
  *reinterpret_cast<uint32_t*>(zrow + 8) = a[2];
  *reinterpret_cast<uint32_t*>(zrow + 8 * ZP + 8) = a[3];
}

// dY (this thread's keys key_lo, key_lo + 8, as DT mma C fragments) of a CTA's keys is complete: the
// CTA owns them, so plain stores (or, for the self-relation, atomics into dx, where other CTAs add
// dX rows; plain stores there too when `dx_owned`: the deterministic backward's dY-only pass, whose
// row-parallel dX pass adds its rows after).
template <int DT>
__device__ __forceinline__ void bwd_store_dy(const RelationKLParams& p, const float (&dy)[DT][4], int64_t b, int hy,
                                             int64_t n, int ds, int64_t key_lo, int tq, bool dx_vec4,
                                             bool dx_owned = false) {
  if (!p.dy && !dx_owned) {
    float* dx_head = p.dx + (b * p.heads + hy) * n * ds;
#pragma unroll
    for (int i = 0; i < DT; ++i) atomic_add_frag(dx_head, ds, key_lo, n, i * 8, ds, dy[i], dx_vec4);
    return;
  }
  float* dst = p.dy ? p.dy + (b * p.student.heads_y + hy) * n * ds : p.dx + (b * p.heads + hy) * n * ds;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t key = key_lo + 8 * r;
    if (key >= n) continue;
#pragma unroll
    for (int i = 0; i < DT; ++i) {
      const int col = i * 8 + 2 * tq;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (col + e >= ds) continue;
        dst[key * ds + col + e] = dy[i][2 * r + e];
      }
    }
  }
}

// The SingleKeyRows of the CTA's batch item for the threads that load the row statistics (threadIdx.x
// < kStatThreads, whole warps), which give those rows g = 0. Kept in shared memory, so that no
// register holds it across the tile loop: each of those warps finds it (single_key_rows; nothing is
// read without a key mask) and stores the same values.
template <int kStatThreads>
__device__ __forceinline__ const SingleKeyRows& bwd_single_key_rows(const uint8_t* kmask, int64_t n) {
  static_assert(kStatThreads % 32 == 0, "whole warps");
  __shared__ SingleKeyRows rows;
  if (threadIdx.x < kStatThreads) {
    const SingleKeyRows r = single_key_rows(kmask, n);
    if (threadIdx.x % 32 == 0) rows = r;
    __syncwarp();
  }
  return rows;
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Launches a backward kernel needing Tile::kSmemBytes of dynamic shared memory with Tile::kThreads
// threads on `grid`.
template <typename Tile, typename Kernel>
void bwd_launch_grid(Kernel kernel, const RelationKLParams& p, bool vec_s, bool vec_t, const char* what, dim3 grid) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             (std::string(what) + ": set shared memory").c_str());
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), (std::string(what) + " launch").c_str());
}

// Launches a column-parallel backward kernel of tile shape Tile (kKeys, kThreads, kSmemBytes) on
// grid (ceil(n / kKeys), heads_y_s, B).
template <typename Tile, typename Kernel>
void bwd_launch(Kernel kernel, const RelationKLParams& p, bool vec_s, bool vec_t, const char* what) {
  bwd_launch_grid<Tile>(kernel, p, vec_s, vec_t, what,
                        dim3(static_cast<unsigned>((p.seq_len + Tile::kKeys - 1) / Tile::kKeys), p.student.heads_y,
                             static_cast<unsigned>(p.batch)));
}

// Launches a row-parallel dX kernel (the deterministic backward's) of tile shape Tile (kRows,
// kThreads, kSmemBytes) on grid (ceil(n / kRows), H, B).
template <typename Tile, typename Kernel>
void bwd_rows_launch(Kernel kernel, const RelationKLParams& p, bool vec_s, bool vec_t, const char* what) {
  bwd_launch_grid<Tile>(kernel, p, vec_s, vec_t, what,
                        dim3(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                             static_cast<unsigned>(p.batch)));
}

}  // namespace cuda
}  // namespace linear_ard

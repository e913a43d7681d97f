// What the two tensor-core backward kernels (relation_kl_bwd.cuh: mma.sync; relation_kl_bwd_wgmma.cuh:
// warpgroup MMA, sm_90a) share: the CTA's prologue (its place, keys and shared memory), the store of
// dY, and the launcher; and the staging of dZ^T for the mma.sync dX GEMM (relation_kl_bwd.cuh and
// dev/cuda's frozen wgmma versions 3-5; the library's wgmma kernel stages dZ^T in the core-matrix layout).
#pragma once

#include <string>

#include "relation_kl_common.cuh"  // defines: kLog2e, atomic_add_frag, cuda_check

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
// dX rows).
template <int DT>
__device__ __forceinline__ void bwd_store_dy(const RelationKLParams& p, const float (&dy)[DT][4], int64_t b, int hy,
                                             int64_t n, int ds, int64_t key_lo, int tq, bool dx_vec4) {
  if (!p.dy) {
    float* dx_head = p.dx + (b * p.heads + hy) * n * ds;
#pragma unroll
    for (int i = 0; i < DT; ++i) atomic_add_frag(dx_head, ds, key_lo, n, i * 8, ds, dy[i], dx_vec4);
    return;
  }
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
        p.dy[((b * p.student.heads_y + hy) * n + key) * ds + col + e] = dy[i][2 * r + e];
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Launches a backward kernel of tile shape Tile (kKeys, kThreads, kSmemBytes) on grid
// (ceil(n / kKeys), heads_y_s, B).
template <typename Tile, typename Kernel>
void bwd_launch(Kernel kernel, const RelationKLParams& p, bool vec_s, bool vec_t, const char* what) {
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             (std::string(what) + ": set shared memory").c_str());
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kKeys - 1) / Tile::kKeys), p.student.heads_y,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), (std::string(what) + " launch").c_str());
}

}  // namespace cuda
}  // namespace linear_ard

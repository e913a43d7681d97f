// Forward variant "wgmma" (sm_90a, D <= 128): relation_kl_fwd_kernel with both logit GEMMs of a
// key tile as warpgroup MMAs. The CTA's 4 warps are one warpgroup; X fragments stay in registers
// (A operand straight from registers, the same fragments the mma.sync kernel keeps), Y tiles are
// read by the tensor cores from shared memory in the core-matrix layout (relation_kl_sm90.cuh):
// no per-warp ldmatrix of Y (a quarter of the shared-memory reads), and the MMAs run
// asynchronously to the issuing warps. The softmax part is the default kernel's, unchanged.
// Selected by LINEAR_ARD_CUDA_FWD_VARIANT=wgmma.
#pragma once

#include "relation_kl_fwd.cuh"   // defines: FwdTile
#include "relation_kl_sm90.cuh"  // defines: load_tile_cm, cm_off, cm_desc, wgmma_*

namespace linear_ard {
namespace cuda {

template <int D>
struct FwdWgmmaTile {
  static_assert(D <= 128, "X fragments live in registers");
  static constexpr int kRows = 64;  // one warpgroup: 4 warps x 16 rows
  static constexpr int kKeys = 32;  // wgmma m64n32k16: 16 accumulator registers per model
  static constexpr int kThreads = 128;
  static constexpr int kMinBlocks = 3;
  static constexpr size_t kSmemBytes = (2 * kRows + 2 * 2 * kKeys) * D * 2;  // no pad: core matrices
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 64), H, B) as relation_kl_fwd_kernel. Shared memory: X_s, X_t [64 x D], Y_s, Y_t
// [32 x D] x 2 stages, all in the core-matrix layout.
template <typename T, int D>
__global__ void __launch_bounds__(128, FwdWgmmaTile<D>::kMinBlocks)
    relation_kl_fwd_wgmma_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = FwdWgmmaTile<D>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, NT = BN / 8, KS = D / 16;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sXs = reinterpret_cast<T*>(smem_raw);
  T* sXt = sXs + BM * D;
  T* sY = sXt + BM * D;  // [stage][model][BN][D]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BM;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
  const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;

  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);

  auto load_keys = [&](int t, int stage) {
    T* dst = sY + stage * 2 * BN * D;
    load_tile_cm<T, BN, D, 128>(dst, S.y, p.student.y_row_stride, int64_t(t) * BN, n, ds, vec_s);
    load_tile_cm<T, BN, D, 128>(dst + BN * D, Tt.y, p.teacher.y_row_stride, int64_t(t) * BN, n, dt, vec_t);
  };
  load_tile_cm<T, BM, D, 128>(sXs, S.x, p.student.x_row_stride, r0, n, ds, vec_s);
  load_tile_cm<T, BM, D, 128>(sXt, Tt.x, p.teacher.x_row_stride, r0, n, dt, vec_t);
  if (ntiles > 0) load_keys(0, 0);
  cp_async_commit();

  // A fragments of this warp's 16 rows: ldmatrix rows l%16, k-chunk l/16.
  const int a_off = cm_off<D>(warp * 16 + lane % 16, (lane / 16) * 8);
  uint32_t xs_frag[KS][4], xt_frag[KS][4];
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    ldmatrix_x4(xs_frag[kk], sXs + a_off + kk * 128);  // +16 columns = 2 core matrices
    ldmatrix_x4(xt_frag[kk], sXt + a_off + kk * 128);
  }

  float m_t[2] = {-INFINITY, -INFINITY}, m_s[2] = {-INFINITY, -INFINITY};
  float l_t[2] = {0.f, 0.f}, l_s[2] = {0.f, 0.f}, acc_a[2] = {0.f, 0.f};
  const int64_t row_lo = r0 + warp * 16 + g;

  for (int t = 0; t < ntiles; ++t) {
    // Tile t becomes visible (to the async proxy too); past the barrier every warp is done with
    // tile t - 1 (its wgmmas were waited for), so its stage can take tile t + 1.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (t + 1 < ntiles) {
      load_keys(t + 1, (t + 1) & 1);
      cp_async_commit();
    }
    const T* sYs = sY + (t & 1) * 2 * BN * D;
    const T* sYt = sYs + BN * D;

    // No zeroing: the first k-step overwrites (scale-d = 0).
    float zs[NT][4], zt[NT][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_rs<T>(zt, xt_frag[kk], cm_desc<D>(sYt + kk * 128), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_rs<T>(zs, xs_frag[kk], cm_desc<D>(sYs + kk * 128), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);

    // From here on as relation_kl_fwd_kernel.
    const int64_t k0 = int64_t(t) * BN;
    const bool masked = kmask != nullptr || k0 + BN > n || (p.causal && k0 + BN - 1 > r0);
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        zs[i][e] *= cs;
        zt[i][e] *= ct;
        if (masked) {
          const int64_t key = k0 + i * 8 + 2 * tq + (e & 1), row = row_lo + (e >> 1) * 8;
          if (key >= n || (p.causal && key > row) || (kmask && !kmask[key])) zs[i][e] = zt[i][e] = -INFINITY;
        }
      }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx_t = m_t[r], mx_s = m_s[r];
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        mx_t = fmaxf(mx_t, fmaxf(zt[i][2 * r], zt[i][2 * r + 1]));
        mx_s = fmaxf(mx_s, fmaxf(zs[i][2 * r], zs[i][2 * r + 1]));
      }
      mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 1));
      mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 2));
      mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 1));
      mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 2));
      const float use_t = mx_t == -INFINITY ? 0.f : mx_t, use_s = mx_s == -INFINITY ? 0.f : mx_s;
      const float alpha_t = ex2(m_t[r] - use_t), alpha_s = ex2(m_s[r] - use_s);
      m_t[r] = mx_t;
      m_s[r] = mx_s;
      float sum_t = 0.f, sum_s = 0.f, sum_a = 0.f;
#pragma unroll
      for (int i = 0; i < NT; ++i)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          const float pt = ex2(zt[i][e] - use_t);
          sum_t += pt;
          sum_s += ex2(zs[i][e] - use_s);
          if (masked) {
            sum_a += pt > 0.f ? pt * (zt[i][e] - zs[i][e]) : 0.f;
          } else {
            sum_a = fmaf(pt, zt[i][e] - zs[i][e], sum_a);
          }
        }
      l_t[r] = fmaf(l_t[r], alpha_t, sum_t);
      l_s[r] = fmaf(l_s[r], alpha_s, sum_s);
      acc_a[r] = fmaf(acc_a[r], alpha_t, sum_a);
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      l_t[r] += __shfl_xor_sync(0xffffffffu, l_t[r], o);
      l_s[r] += __shfl_xor_sync(0xffffffffu, l_s[r], o);
      acc_a[r] += __shfl_xor_sync(0xffffffffu, acc_a[r], o);
    }
    const int64_t row = row_lo + r * 8;
    if (tq == 0 && row < n) {
      const int64_t o = (b * p.heads + h) * n + row;
      if (l_t[r] > 0.f) {
        const float lse2_t = m_t[r] + __log2f(l_t[r]), lse2_s = m_s[r] + __log2f(l_s[r]);
        p.kl[o] = kLn2 * (acc_a[r] / l_t[r] - (lse2_t - lse2_s));
        p.lse_teacher[o] = kLn2 * lse2_t;
        p.lse_student[o] = kLn2 * lse2_s;
      } else {
        p.kl[o] = 0.f;
        p.lse_teacher[o] = p.lse_student[o] = -INFINITY;
      }
    }
  }
#endif  // LINEAR_ARD_SM90A
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D>
void relation_kl_fwd_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  using Tile = FwdWgmmaTile<D>;
  auto kernel = relation_kl_fwd_wgmma_kernel<T, D>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_wgmma: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_wgmma launch");
}

}  // namespace cuda
}  // namespace linear_ard

// Relation-KL deterministic backward, row-parallel dX pass on tensor cores (mma.sync): every dX row
// summed by the one CTA that owns it, in a fixed order, and written once. Runs after the
// column-parallel kernel's dY-only pass (relation_kl_bwd.cuh, kDx = false), which for the
// self-relation has already stored dY into dx; this pass adds dX to it.
#pragma once

#include "relation_kl_bwd_common.cuh"  // defines: bwd_rows_launch, BwdMmaOffsets, bwd_mma_logits, bwd_mma_grad, zero_frags
#include "relation_kl_common.cuh"       // defines: TileLoader, cta_place, side_ptrs, ex2, single_key_rows

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// What a row-parallel thread holds of its two rows (row_lo, row_lo + 8): the forward's LSEs in
// log2 units and g * scale_s. Rows past n or without a visible key get lse2 = +inf and g = 0, so
// their P_s, P_t and dZ are 0; rows that see a single key get g = 0 (their exact gradient is 0).
// Every lane of the warp must call it (single_key_rows is a warp's search).
struct BwdRowsStats {
  float lse2_s[2], lse2_t[2], g[2];
  __device__ __forceinline__ BwdRowsStats(const RelationKLParams& p, int64_t b, int h, int64_t row_lo,
                                          const uint8_t* kmask) {
    const int64_t n = p.seq_len;
    const SingleKeyRows single = single_key_rows(kmask, n);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t row = row_lo + 8 * r, o = (b * p.heads + h) * n + row;
      const float lse_s = row < n ? p.lse_student[o] : -INFINITY;
      const bool live = lse_s != -INFINITY;
      lse2_s[r] = live ? lse_s * kLog2e : INFINITY;
      lse2_t[r] = live ? p.lse_teacher[o] * kLog2e : INFINITY;
      g[r] = live && !single.contains(p.causal, row, n) ? p.grad_kl[o] * p.student.scale : 0.f;
    }
  }
};

// dZ of one (16 rows x 8 kRT keys) tile of a warp in place of zs (the S accumulators of both models,
// rows row_lo, row_lo + 8 as mma C fragments: element e of zs[i] is row slot e >> 1, key column
// 8i + 2tq + (e & 1)). kMasked: keys past n, hidden by the key mask (vis[column] == 0) or after the
// row (causal) get dZ = 0; elsewhere every key of the tile is visible to every row of the warp.
template <bool kMasked, int kRT>
__device__ __forceinline__ void bwd_rows_dz(float (&zs)[kRT][4], const float (&zt)[kRT][4], const BwdRowsStats& st,
                                            float cs, float ct, const uint8_t* vis, bool causal, int64_t key0,
                                            int64_t row_lo, int tq) {
#pragma unroll
  for (int i = 0; i < kRT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e >> 1, col = i * 8 + 2 * tq + (e & 1);
      const float ps = ex2(fmaf(zs[i][e], cs, -st.lse2_s[r]));
      const float pt = ex2(fmaf(zt[i][e], ct, -st.lse2_t[r]));
      float dz = st.g[r] * (ps - pt);
      if constexpr (kMasked) {
        if (!vis[col] || (causal && key0 + col > row_lo + 8 * r)) dz = 0.f;
      }
      zs[i][e] = dz;
    }
}

// Stores a warp's finished dX rows (row_lo, row_lo + 8; columns 8i + 2tq, + 1 as mma C fragments) of
// X head h into dx, adding what is there for the self-relation (the dY-only pass stored dY there).
template <int DT>
__device__ __forceinline__ void bwd_rows_store(const RelationKLParams& p, const float (&dx)[DT][4], int64_t b, int h,
                                               int64_t row_lo, int tq) {
  const int64_t n = p.seq_len;
  const int ds = p.student.head_dim;
  float* head = p.dx + (b * p.heads + h) * n * ds;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row_lo + 8 * r;
    if (row >= n) continue;
#pragma unroll
    for (int i = 0; i < DT; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = i * 8 + 2 * tq + e;
        if (col >= ds) continue;
        float* dst = head + row * ds + col;
        *dst = p.dy ? dx[i][2 * r + e] : *dst + dx[i][2 * r + e];
      }
    }
  }
}

// What both row-parallel kernels share of a CTA: its place (X head cta.head of batch item cta.batch,
// rows [i0, i0 + BM), heaviest causal row tiles first), both sides' pointers, the scales in log2
// units, the key tiles its rows see and their loads into shared memory laid out as
// [X_s, X_t][BM][kPitch], then [stage][Y_s, Y_t][BN][kPitch], then [stage][BN] bytes of key
// visibility (pitch D + 8 for the mma.sync kernel's ldmatrix; kCoreMatrix: the core-matrix layout
// the wgmma kernel's descriptors read, no padding).
template <typename T, int BM, int BN, int D, int NT, bool kCoreMatrix>
struct BwdRowsCta {
  static constexpr int kPitch = kCoreMatrix ? D : D + 8;
  static constexpr size_t kSmemBytes = (2 * BM + 2 * 2 * BN) * kPitch * sizeof(T) + 2 * BN;

  CtaPlace cta;
  int64_t n, i0;
  SidePtrs<T> s, t;
  float cs, ct;  // scale * log2(e) of the student and the teacher
  const uint8_t* kmask;
  int ntiles;  // key tiles of BN keys, up to the CTA's last row when causal
  T *sXs, *sXt, *sY;
  uint8_t* sVis;

  __device__ __forceinline__ BwdRowsCta(const RelationKLParams& p_, unsigned char* smem)
      : cta(cta_place(p_.cta_head_group)),
        n(p_.seq_len),
        i0(static_cast<int64_t>(gridDim.x - 1 - cta.rank) * BM),
        s(side_ptrs<T>(p_.student, p_.heads, cta.batch, cta.head)),
        t(side_ptrs<T>(p_.teacher, p_.heads, cta.batch, cta.head)),
        cs(p_.student.scale * kLog2e),
        ct(p_.teacher.scale * kLog2e),
        kmask(p_.key_mask ? p_.key_mask + cta.batch * p_.key_mask_batch_stride : nullptr),
        ntiles(static_cast<int>(((p_.causal ? min(n, i0 + BM) : n) + BN - 1) / BN)),
        sXs(reinterpret_cast<T*>(smem)),
        sXt(sXs + BM * kPitch),
        sY(sXt + BM * kPitch),
        sVis(reinterpret_cast<uint8_t*>(sY + 2 * 2 * BN * kPitch)) {}

  // The CTA's rows of X_s and X_t (cp.async where a side allows), rows >= n and columns >= d zero.
  __device__ __forceinline__ void load_rows(const RelationKLParams& p, bool vec_s, bool vec_t) const {
    TileLoader<T, BM, D, NT, kCoreMatrix>(s.x, p.student.x_row_stride, n, p.student.head_dim, vec_s).load(sXs, i0);
    TileLoader<T, BM, D, NT, kCoreMatrix>(t.x, p.teacher.x_row_stride, n, p.teacher.head_dim, vec_t).load(sXt, i0);
  }
  // Key tile kt of Y_s and Y_t into stage `stage`, and its keys' visibility (key < n and the key
  // mask) by plain stores, read after the barrier that makes the tile visible.
  __device__ __forceinline__ void load_keys(const RelationKLParams& p, int kt, int stage, bool vec_s,
                                            bool vec_t) const {
    T* dst = sY + stage * 2 * BN * kPitch;
    const int64_t key0 = int64_t(kt) * BN;
    TileLoader<T, BN, D, NT, kCoreMatrix>(s.y, p.student.y_row_stride, n, p.student.head_dim, vec_s).load(dst, key0);
    TileLoader<T, BN, D, NT, kCoreMatrix>(t.y, p.teacher.y_row_stride, n, p.teacher.head_dim, vec_t)
        .load(dst + BN * kPitch, key0);
    for (int k = threadIdx.x; k < BN; k += NT) {
      const int64_t key = key0 + k;
      sVis[stage * BN + k] = key < n && (kmask == nullptr || kmask[key]);
    }
  }
  // Issues the CTA's X rows and key tile 0 (one cp.async group).
  __device__ __forceinline__ void begin(const RelationKLParams& p, bool vec_s, bool vec_t) const {
    load_rows(p, vec_s, vec_t);
    if (ntiles > 0) load_keys(p, 0, 0, vec_s, vec_t);
    cp_async_commit();
  }
  // Key tile kt (issued one iteration ago; at kt = 0 with the X rows) becomes visible: fence() runs
  // between the wait and the barrier (the wgmma kernel's proxy fence: cp.async writes through the
  // generic proxy, wgmma reads through the async one). Past the barrier every warp is done with
  // tile kt - 1, so its stage takes tile kt + 1.
  template <typename Fence>
  __device__ __forceinline__ void next_tile(const RelationKLParams& p, int kt, bool vec_s, bool vec_t,
                                            Fence&& fence) const {
    cp_async_wait<0>();
    fence();
    __syncthreads();
    if (kt + 1 < ntiles) {
      load_keys(p, kt + 1, (kt & 1) ^ 1, vec_s, vec_t);
      cp_async_commit();
    }
  }
  // Whether key tile kt needs the per-element mask for the warp whose first row is warp_row0: a key
  // mask, keys past n, or (causal) a key after that row.
  __device__ __forceinline__ bool masked(bool causal, int kt, int64_t warp_row0) const {
    const int64_t key_end = int64_t(kt + 1) * BN;
    return kmask != nullptr || key_end > n || (causal && key_end - 1 > warp_row0);
  }
};

// Tile shape of the mma.sync row-parallel pass for a padded head-dim bucket D (16-bit inputs): the
// column-parallel kernel's (BwdTile) with rows and keys in each other's place.
template <int D>
struct BwdRowsTile {
  static constexpr int kRows = D <= 128 ? 128 : 64;  // rows per CTA: one warp per 16 rows
  static constexpr int kKeys = D <= 128 ? 64 : 32;   // keys per pipeline stage
  static constexpr int kWarps = kRows / 16;
  static constexpr int kThreads = kWarps * 32;
  template <typename T>
  using Cta = BwdRowsCta<T, kRows, kKeys, D, kThreads, false>;
  static constexpr size_t kSmemBytes = Cta<__half>::kSmemBytes;  // any 16-bit T
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / kRows), H, B), heaviest causal row tiles first; CTA = kRows rows of one X head;
// warp w owns rows 16w..16w+15. X_s and X_t of those rows are loaded once; the CTA walks the key
// tiles that its rows see (up to its last row when causal), kKeys keys at a time with Y_s, Y_t and
// the keys' visibility double-buffered (cp.async, one barrier per tile; BwdRowsCta). Per key tile
// warp w computes S = X[its rows] Y[keys]^T for both models (bwd_mma_logits), dZ = g * scale_s *
// (P_s - P_t) with P = exp2(z - lse2) from the forward's LSEs (bwd_rows_dz), then dX[its rows] +=
// dZ Y_s with the dZ accumulators as the A operand and Y_s read transposed (bwd_mma_grad): a 16 x D
// fp32 accumulator in registers for the whole CTA, stored once at the end (bwd_rows_store). No
// atomics: every result is the same on every run.
template <typename T, int D>
__global__ void __launch_bounds__(BwdRowsTile<D>::kThreads, 1)
    relation_kl_bwd_rows_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
  using Tile = BwdRowsTile<D>;
  using Cta = typename Tile::template Cta<T>;
  constexpr int BN = Tile::kKeys, P = Cta::kPitch, RT = BN / 8, DT = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Cta c(p, smem_raw);
  c.begin(p, vec_s, vec_t);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tq = lane % 4;
  const int64_t warp_row0 = c.i0 + warp * 16, row_lo = warp_row0 + lane / 4;  // rows row_lo, row_lo + 8
  const BwdRowsStats st(p, c.cta.batch, c.cta.head, row_lo, c.kmask);
  const BwdMmaOffsets<P> off(warp, lane);  // A = X rows, B = the stage's keys

  float dx[DT][4];
  zero_frags(dx);
  for (int kt = 0; kt < c.ntiles; ++kt) {
    const int stage = kt & 1;
    c.next_tile(p, kt, vec_s, vec_t, [] {});
    const T* sYs = c.sY + stage * 2 * BN * P;
    const T* sYt = sYs + BN * P;
    const uint8_t* vis = c.sVis + stage * BN;
    const int64_t key0 = int64_t(kt) * BN;

    float zs[RT][4], zt[RT][4];  // S of both models: 16 rows x BN keys per warp
    bwd_mma_logits<T, D, P>(zs, zt, c.sXs, c.sXt, sYs, sYt, off);
    if (c.masked(p.causal, kt, warp_row0)) {
      bwd_rows_dz<true>(zs, zt, st, c.cs, c.ct, vis, p.causal, key0, row_lo, tq);
    } else {
      bwd_rows_dz<false>(zs, zt, st, c.cs, c.ct, vis, p.causal, key0, row_lo, tq);
    }
    bwd_mma_grad<T, P>(dx, zs, sYs, off, [](int, const uint32_t(&)[4]) {});  // dX += dZ Y_s
  }

  bwd_rows_store(p, dx, c.cta.batch, c.cta.head, row_lo, tq);
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The deterministic backward's dX pass, after the column-parallel dY-only pass on the same stream.
template <typename T, int D>
void relation_kl_bwd_rows_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  bwd_rows_launch<BwdRowsTile<D>>(relation_kl_bwd_rows_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_rows");
}

}  // namespace cuda
}  // namespace linear_ard

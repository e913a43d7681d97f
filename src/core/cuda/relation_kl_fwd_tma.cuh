// The sm_90a forward for D = 64 and 128 where both sides can be read by TMA (forward version 9 of
// dev/cuda, promoted 2026-11-29: 9 % faster than version 8, which was 18 % faster than version 6 on
// one H200, docs/kernel.md). Version 8 is version 6
// (relation_kl_fwd_wgmma.cuh) with the key tiles (Y_s, Y_t: the wgmma B operand) loaded by TMA tensor
// copies (whole 128-byte lines, 128-byte swizzle) instead of the producer warp's 16-byte cp.async,
// which kept version 6 at 81 % of the L2's throughput with half of its global sectors "excessive".
// X tiles (the A operand, once per CTA) stay in the core-matrix layout by cp.async, signalled by
// their own mbarrier. Everything else (ping-pong, masks, causal split, update, store) is version 6's
// (fwd_pingpong_consume). A kernel of its own rather than a branch of version 6's template: the
// tensor maps are kernel parameters. Version 9 is version 8 with the consumers' instruction stream
// tightened (fwd_pingpong_consume's kUniformIssue, kFoldScale: wgmma descriptors in uniform registers,
// the scales folded into the exponent arguments of unmasked tiles where fwd_fold_ok); version 8 stays
// this kernel with both switches off (dev/cuda). Version 10 (promoted 2026-11-29 for n >= 8K) is
// version 9 with three consumer warpgroups instead of two (192 rows a CTA). D = 96 and sides TMA
// cannot read (tma_side_ok) run version 6.
#pragma once

#include <cmath>

#include "relation_kl_fwd_wgmma.cuh"  // defines: FwdWgmmaTile, fwd_warp_load_cm, fwd_pingpong_consume, sm90 wrappers
#include "relation_kl_scratch.cuh"    // defines: ScratchInts
#include "relation_kl_tma_map.cuh"    // defines: tma_map, tma_y_operand

namespace linear_ard {
namespace cuda {

// Shared memory: the Y ring first (1024-byte aligned: the 128-byte swizzle repeats every 8 rows x
// 128 bytes, and the wgmma descriptor's base offset is left 0), [stage][model s, t][D / 64 boxes]
// [64 keys x 64 elements, 128B-swizzled] (8 KB a box); then X_s, X_t [128 x D] in the core-matrix
// layout; then the mbarriers full[K], empty[K], x_full. 1024 bytes of slack for aligning the base.
// kWarpgroups: consumer warpgroups (FwdWgmmaTile's; 3 is forward version 10: 192 rows, 230,472
// bytes at D = 128).
// kProducerGroup (forward version 19): the producer is a whole warpgroup (warps 1-3 only give
// their registers back), so that setmaxnreg can move registers to the consumers.
template <int D, int kWarpgroups = 2, bool kProducerGroup = false>
struct FwdTmaTile {
  static_assert(D == 64 || D == 128, "TMA key boxes are 64 elements wide");
  using Base = FwdWgmmaTile<D, false, kWarpgroups>;
  static constexpr int kRows = Base::kRows;    // 64 x kWarpgroups
  static constexpr int kKeys = Base::kKeys;    // 64
  static constexpr int kStages = Base::kStages;  // 4
  static constexpr int kConsumers = Base::kConsumers;
  static constexpr int kThreads = kConsumers + (kProducerGroup ? 128 : 32);
  // kProducerGroup's split of the register file (setmaxnreg): 128 x 24 + 384 x 160 = 64,512 of the
  // SM's 65,536 at three consumer warpgroups, i.e. at most 4 x 128, ptxas's count for 512 threads.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 160;
  static constexpr int kBoxCols = 64;
  static constexpr int kBoxes = D / kBoxCols;                        // per model and stage
  static constexpr uint32_t kBoxBytes = kKeys * kBoxCols * 2;       // 8192
  static constexpr uint32_t kModelBytes = kBoxes * kBoxBytes;       // one model's key tile
  static constexpr uint32_t kStageBytes = 2 * kModelBytes;          // the expect_tx count of full[s]
  static constexpr size_t kYBytes = size_t(kStages) * kStageBytes;
  static constexpr size_t kXBytes = size_t(2) * kRows * D * 2;
  static constexpr size_t kBarOffset = kYBytes + kXBytes;
  static constexpr size_t kSmemBytes = 1024 + kBarOffset + (2 * kStages + 1) * sizeof(uint64_t);
  static_assert(kYBytes % 1024 == 0, "X and the barriers after an aligned ring");
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Version 6's kernel (relation_kl_fwd_wgmma_kernel<T, D, false>) with the key tiles by TMA, as the
// body of relation_kl_fwd_tma_kernel: with kUniformIssue (and kFoldScale where fwd_fold_ok) the
// library's forward version 9, with both off dev/cuda's version 8 (fwd_pingpong_consume says what
// the two switches do). The producer warp: all 32 lanes
// issue the X tiles' cp.async; lane 0 then issues the TMA copies of key tiles 0 .. K-1 (stages all
// empty); all lanes wait for their X copies, fence them to the async proxy and arrive on x_full (32
// arrivals); lane 0 goes on with tiles K.. (wait empty[s], then arrive.expect_tx(full[s], both
// models' bytes) and the 2 x D/64 box copies onto full[s], whose single arrival plus the
// transaction bytes complete its phase). Rows >= n and columns >= d come as zeros from the TMA's
// out-of-bounds fill. The consumers are the library's (fwd_pingpong_consume, version 6's loop) with
// sw128_desc's B descriptors and a wait for x_full before their loop. map_s, map_t: the kernel's
// __grid_constant__ parameters.
// kDiag: forward version 11 (fwd_pingpong_consume's), a row that overflowed setting *diag_redo;
// kXRegs: fwd_pingpong_consume's (forward version 16: relation_kl_fwd_diag_kernel's at D = 64).
// kProducerGroup (forward version 19; FwdTmaTile<D, kWarpgroups, true>::kThreads threads): the
// producer warpgroup gives registers back (setmaxnreg.dec to kProducerRegs) and the consumers take
// them (setmaxnreg.inc to kConsumerRegs); warp 0 of the producer warpgroup is the producer warp.
template <typename T, int D, bool kUniformIssue, bool kFoldScale, int kWarpgroups, bool kDiag = false,
          int kXRegs = 0, bool kProducerGroup = false>
__device__ __forceinline__ void fwd_tma_cta(const RelationKLParams& p, const CUtensorMap& map_s,
                                            const CUtensorMap& map_t, int* diag_redo = nullptr) {
#ifdef LINEAR_ARD_SM90A
  using Tile = FwdTmaTile<D, kWarpgroups, kProducerGroup>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, K = Tile::kStages;
  // Declared 128-byte aligned only, so that the compiler keeps the rounding up to 1024 (with
  // __align__(1024) it assumes the base aligned and folds the rounding away).
  extern __shared__ __align__(128) unsigned char fwd_tma_smem[];
  unsigned char* base = fwd_tma_smem + ((1024 - (smem_u32(fwd_tma_smem) & 1023)) & 1023);
  const uint32_t sY = smem_u32(base);  // [stage][model][box], shared-window address
  T* sXs = reinterpret_cast<T*>(base + Tile::kYBytes);
  T* sXt = sXs + BM * D;
  uint64_t* full = reinterpret_cast<uint64_t*>(base + Tile::kBarOffset);
  uint64_t* empty = full + K;
  uint64_t* x_full = empty + K;

  const CtaPlace cta = cta_place(p.cta_head_group);  // heaviest causal row tiles first
  const int h = cta.head;
  const int64_t b = cta.batch, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - cta.rank) * BM;
  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < K; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], Tile::kConsumers / 32);
    }
    mbar_init(x_full, 32);
    fence_mbarrier_init();
  }
  __syncthreads();  // the only CTA-wide barrier

  if (threadIdx.x >= Tile::kConsumers) {
    if constexpr (kProducerGroup) {
      setmaxnreg_dec<Tile::kProducerRegs>();
      if (threadIdx.x >= Tile::kConsumers + 32) return;
    }
    const int lane = threadIdx.x % 32;
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    const int hy_s = h / (p.heads / p.student.heads_y), hy_t = h / (p.heads / p.teacher.heads_y);
    // Key tile t into stage t mod K (lane 0 only).
    auto produce = [&](int t) {
      const int s = t % K;
      if (t >= K) mbar_wait(&empty[s], ((t / K) & 1) ^ 1);
      mbar_arrive_expect_tx(&full[s], Tile::kStageBytes);
      const uint32_t dst = sY + s * Tile::kStageBytes;
#pragma unroll
      for (int c = 0; c < Tile::kBoxes; ++c) {
        tma_load_4d(dst + c * Tile::kBoxBytes, &map_s, c * Tile::kBoxCols, t * BN, hy_s, static_cast<int>(b), &full[s]);
        tma_load_4d(dst + Tile::kModelBytes + c * Tile::kBoxBytes, &map_t, c * Tile::kBoxCols, t * BN, hy_t,
                    static_cast<int>(b), &full[s]);
      }
    };
    fwd_warp_load_cm<T, BM, D>(sXs, S.x, p.student.x_row_stride, r0, n, p.student.head_dim, true, lane);
    fwd_warp_load_cm<T, BM, D>(sXt, Tt.x, p.teacher.x_row_stride, r0, n, p.teacher.head_dim, true, lane);
    cp_async_commit();
    const int first = min(ntiles, K);
    if (lane == 0) {
      tma_prefetch_map(&map_s);
      tma_prefetch_map(&map_t);
      for (int t = 0; t < first; ++t) produce(t);
    }
    cp_async_wait<0>();
    fence_proxy_async();
    mbar_arrive(x_full);
    if (lane == 0) {
      for (int t = first; t < ntiles; ++t) produce(t);
    }
    return;
  }

  // Version 6's consumers (the library's fwd_pingpong_consume), with the B descriptors of the
  // swizzled boxes: k-step kk of model m in stage s is box kk / 4 of that model's tile, 32 bytes
  // further per k16 inside the box (descriptor address units of 16 bytes); and a wait for the X
  // tiles before the first key tile. Version 9 adds the offsets to the low word alone (desc_join).
  if constexpr (kProducerGroup) setmaxnreg_inc<Tile::kConsumerRegs>();
  const uint64_t ydesc0 = sw128_desc(sY);
  fwd_pingpong_consume<T, D, false, kUniformIssue, kFoldScale, kWarpgroups, kDiag, kXRegs>(
      p, sXs, sXt, full, empty, b, h, n, r0, ntiles,
      [&](int stage, int model, int kk) {
        const uint32_t off = (model * Tile::kModelBytes + (kk / 4) * Tile::kBoxBytes + (kk % 4) * 32) >> 4;
        if constexpr (kUniformIssue) {
          // The stage's low word once a tile, a constant a k-step (all offsets multiples of 16).
          return desc_join(static_cast<uint32_t>(ydesc0) + stage * (Tile::kStageBytes >> 4) + off,
                           static_cast<uint32_t>(ydesc0 >> 32));
        } else {
          return ydesc0 + ((stage * Tile::kStageBytes + model * Tile::kModelBytes + (kk / 4) * Tile::kBoxBytes +
                            (kk % 4) * 32) >> 4);
        }
      },
      [&] { mbar_wait(x_full, 0); }, diag_redo);
#endif
}

// fwd_tma_cta as a kernel: <true, kFoldScale> the library's (version 9; kFoldScale where
// fwd_fold_ok; below kFwdThreeGroupsFrom keys), <true, kFoldScale, 3> the library's from there on
// (version 10), <false, false> dev/cuda forward version 8.
template <typename T, int D, bool kUniformIssue, bool kFoldScale, int kWarpgroups = 2>
__global__ void __launch_bounds__(FwdTmaTile<D, kWarpgroups>::kThreads, 1)
    relation_kl_fwd_tma_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                               const __grid_constant__ CUtensorMap map_t) {
  fwd_tma_cta<T, D, kUniformIssue, kFoldScale, kWarpgroups>(p, map_s, map_t);
}

// Forward version 11 (versions 9 / 10 with kWarpgroups = 2 / 3 and the stabilizers fixed at each
// row's diagonal), one of two launches of the same grid: kPass 0 runs fwd_tma_cta with kDiag and
// sets the CTA's flag in redo ([B][H][grid.x], zeroed by the caller) when one of its rows
// overflowed; kPass 1 runs the online CTA (versions 9 / 10) where the flag is set, and returns at
// once elsewhere. With three warpgroups at D = 64 kPass 0 reads X from registers (kXRegs: forward
// version 16, 12-16 % faster than 11 there on one H100; at D = 128 it does not fit, and two
// warpgroups with X in registers, version 15, were 11-15 % slower than 11).
template <typename T, int D, int kWarpgroups, int kPass>
__global__ void __launch_bounds__(FwdTmaTile<D, kWarpgroups>::kThreads, 1)
    relation_kl_fwd_diag_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                const __grid_constant__ CUtensorMap map_t, int* redo) {
  const CtaPlace cta = cta_place(p.cta_head_group);
  int* flag = redo + (cta.batch * p.heads + cta.head) * int64_t(gridDim.x) + cta.rank;
  if constexpr (kPass == 1) {
    if (*flag == 0) return;
  }
  constexpr int kXRegs = kPass == 0 && kWarpgroups == 3 && D == 64 ? 2 : 0;  // forward version 16
  fwd_tma_cta<T, D, true, true, kWarpgroups, kPass == 0, kXRegs>(p, map_s, map_t, flag);
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The grid of a TMA forward: (ceil(n / rows), H, B).
template <int kWarpgroups>
dim3 fwd_tma_grid(const RelationKLParams& p) {
  return dim3(static_cast<unsigned>((p.seq_len + 64 * kWarpgroups - 1) / (64 * kWarpgroups)), p.heads,
              static_cast<unsigned>(p.batch));
}

// Launches `kernel` (an instance of relation_kl_fwd_tma_kernel or relation_kl_fwd_diag_kernel) on the params
// (16-bit T, D = 64 or 128, the bucket of max(d_s, d_t)); the caller has checked tma_side_ok for
// both sides; kWarpgroups: the kernel's.
// `args...` after the two maps: the diagonal kernel's flags. kProducerGroup: the kernel's
// FwdTmaTile's.
template <typename T, int D, int kWarpgroups = 2, bool kProducerGroup = false, typename... Args>
void fwd_tma_run(const RelationKLParams& p, void (*kernel)(RelationKLParams, CUtensorMap, CUtensorMap, Args...),
                 Args... args) {
  using Tile = FwdTmaTile<D, kWarpgroups, kProducerGroup>;
  const CUtensorMap map_s = tma_map<T>(tma_y_operand(p.student, p.seq_len, p.batch), Tile::kKeys);
  const CUtensorMap map_t = tma_map<T>(tma_y_operand(p.teacher, p.seq_len, p.batch), Tile::kKeys);
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_tma: set shared memory");
  kernel<<<fwd_tma_grid<kWarpgroups>(p), Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(
      p, map_s, map_t, args...);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_tma launch");
}

// Whether the scales may be folded: both log2-unit scales (as the kernel computes them) positive
// and finite, and their ratio a normal float (fwd_pipe_update_folded's rho).
inline bool fwd_fold_ok(const RelationKLParams& p) {
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  return cs > 0.f && ct > 0.f && std::isfinite(cs) && std::isfinite(ct) && std::isnormal(cs / ct);
}

// Forward version 9 (kWarpgroups = 2) or 10 (3): uniform descriptors, the scales folded where
// fwd_fold_ok (a scale <= 0 runs version 8's update).
template <typename T, int D, int kWarpgroups>
void fwd_tma_launch_groups(const RelationKLParams& p) {
  if (fwd_fold_ok(p)) {
    fwd_tma_run<T, D, kWarpgroups>(p, relation_kl_fwd_tma_kernel<T, D, true, true, kWarpgroups>);
  } else {
    fwd_tma_run<T, D, kWarpgroups>(p, relation_kl_fwd_tma_kernel<T, D, true, false, kWarpgroups>);
  }
}

// Where version 11 applies: both sides self-relations (one tensor as X and Y, each head its own),
// no key mask (so every row sees its own key), both scales foldable.
inline bool fwd_diag_ok(const RelationKLParams& p) {
  auto self = [&](const RelationSide& s) {
    return s.x == s.y && s.heads_y == p.heads && s.x_batch_stride == s.y_batch_stride &&
           s.x_head_stride == s.y_head_stride && s.x_row_stride == s.y_row_stride;
  };
  return fwd_fold_ok(p) && p.key_mask == nullptr && self(p.student) && self(p.teacher);
}

// Forward version 11 where fwd_diag_ok (the fixed-stabilizer pass, then the online forward on the
// CTAs it flagged; the flags from the library's scratch pool on the launch stream), versions 9 / 10
// elsewhere. `first`: the fixed-stabilizer pass's kernel (dev/cuda's forwards 11, 12, 15, 16, 19
// hand their own; kProducerGroup: its FwdTmaTile's).
template <typename T, int D, int kWarpgroups, bool kProducerGroup = false>
void fwd_diag_launch_groups(const RelationKLParams& p,
                            void (*first)(RelationKLParams, CUtensorMap, CUtensorMap, int*) =
                                relation_kl_fwd_diag_kernel<T, D, kWarpgroups, 0>) {
  if (!fwd_diag_ok(p)) return fwd_tma_launch_groups<T, D, kWarpgroups>(p);
  const dim3 grid = fwd_tma_grid<kWarpgroups>(p);
  const ScratchInts redo(size_t(grid.x) * grid.y * grid.z, static_cast<cudaStream_t>(p.stream));
  fwd_tma_run<T, D, kWarpgroups, kProducerGroup, int*>(p, first, redo.data());
  fwd_tma_run<T, D, kWarpgroups, false, int*>(p, relation_kl_fwd_diag_kernel<T, D, kWarpgroups, 1>, redo.data());
}

// From this length on the library's forward runs three consumer warpgroups (version 10: on one
// H200, B = 1, H = 32, causal bf16: at d = 128 5-6 % faster than 9 at 8K and 9 % at 16K, but 1-3 %
// slower at 4K; at d = 64 3-6 % faster from 8K, equal at 4K; dev/cuda/README.md, version 10).
constexpr int64_t kFwdThreeGroupsFrom = 8192;

// The library's: forward version 11 (where fwd_diag_ok; versions 10 / 9 elsewhere) with three
// consumer warpgroups from kFwdThreeGroupsFrom keys on, two below.
template <typename T, int D>
void relation_kl_fwd_tma_launch(const RelationKLParams& p) {
  if (p.seq_len >= kFwdThreeGroupsFrom) {
    fwd_diag_launch_groups<T, D, 3>(p);
  } else {
    fwd_diag_launch_groups<T, D, 2>(p);
  }
}

}  // namespace cuda
}  // namespace linear_ard

// dev/cuda forward version 8: the library's sm_90a forward (version 6,
// src/core/cuda/relation_kl_fwd_wgmma.cuh) with the key tiles (Y_s, Y_t: the wgmma B operand) loaded
// by TMA tensor copies (cp.async.bulk.tensor, whole 128-byte lines, 128-byte swizzle) instead of the
// producer warp's 16-byte cp.async, which Nsight Compute shows at 81 % of L2 throughput with half
// of the global sectors "excessive" (docs/kernel.md, "Where the time goes", "Forward version 8").
// X tiles (the A operand, once per CTA) stay in the core-matrix layout by cp.async, signalled by
// their own mbarrier. Everything else (ping-pong, masks, causal split, update, store) is version 6's,
// from the library's headers. A separate kernel rather than a branch of the library's template: the
// tensor maps are kernel parameters, and a parameter (or template argument) added to the library's
// kernel would change its symbol and parameter list, i.e. its generated code.
// Covers D = 64 and 128 (one or two 64-element boxes a row); D = 96 and sides whose Y rows are not
// 16-byte aligned (side_is_vec) are left to the caller (relation_kl_fwd_tma_run returns false).
#pragma once

#include <cuda.h>          // CUtensorMap, cuTensorMapEncodeTiled's enums (types only: no libcuda link)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <stdexcept>
#include <string>

#include "relation_kl_fwd_wgmma.cuh"  // defines: FwdWgmmaTile, fwd_warp_load_cm, fwd_pingpong_consume, sm90 wrappers

namespace linear_ard {
namespace cuda {

// Shared memory: the Y ring first (1024-byte aligned: the 128-byte swizzle repeats every 8 rows x
// 128 bytes, and the wgmma descriptor's base offset is left 0), [stage][model s, t][D / 64 boxes]
// [64 keys x 64 elements, 128B-swizzled] (8 KB a box); then X_s, X_t [128 x D] in the core-matrix
// layout; then the mbarriers full[K], empty[K], x_full. 1024 bytes of slack for aligning the base.
template <int D>
struct FwdTmaTile {
  static_assert(D == 64 || D == 128, "TMA key boxes are 64 elements wide");
  using Base = FwdWgmmaTile<D, false>;
  static constexpr int kRows = Base::kRows;    // 128
  static constexpr int kKeys = Base::kKeys;    // 64
  static constexpr int kStages = Base::kStages;  // 4
  static constexpr int kConsumers = Base::kConsumers;
  static constexpr int kThreads = kConsumers + 32;
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
// CUDA kernels' building blocks (sm_90a: TMA, mbarrier transaction counts, swizzled descriptors)

// K-major wgmma descriptor of a 128B-swizzled tile at shared address `addr` (a row = 64 16-bit
// elements = 128 bytes): SBO = 1024 bytes (next 8 rows), LBO unused (1), base offset 0, layout type 1
// (128-byte swizzle, bits 62-63). A k16 step inside the 64-element row adds 32 bytes to the start
// address (the hardware applies the swizzle to the computed addresses, so the tile must be
// 1024-byte aligned).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

// Arrives once on `bar` and adds `bytes` to the transaction count its phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

// One box of a 4-D tensor map at coordinates (c0 innermost .. c3) into shared memory at `dst`,
// completing `bytes` (the box's, zero-filled parts included) on `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint64_t* bar) {
#ifdef LINEAR_ARD_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(bar))
      : "memory");
#endif
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Version 6's kernel (relation_kl_fwd_wgmma_kernel<T, D, false>) with the key tiles by TMA. The
// producer warp: all 32 lanes issue the X tiles' cp.async; lane 0 then issues the TMA copies of key
// tiles 0 .. K-1 (stages all empty); all lanes wait for their X copies, fence them to the async
// proxy and arrive on x_full (32 arrivals); lane 0 goes on with tiles K.. (wait empty[s], then
// arrive.expect_tx(full[s], both models' bytes) and the 2 x D/64 box copies onto full[s], whose
// single arrival plus the transaction bytes complete its phase). Rows >= n and columns >= d come
// as zeros from the TMA's out-of-bounds fill. The consumers are the library's (fwd_pingpong_consume,
// version 6's loop) with sw128_desc's B descriptors and a wait for x_full before their loop.
template <typename T, int D>
__global__ void __launch_bounds__(FwdTmaTile<D>::kThreads, 1)
    relation_kl_fwd_tma_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                               const __grid_constant__ CUtensorMap map_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = FwdTmaTile<D>;
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

  const int h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BM;
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
  // tiles before the first key tile.
  const uint64_t ydesc0 = sw128_desc(sY);
  fwd_pingpong_consume<T, D, false>(
      p, sXs, sXt, full, empty, b, h, n, r0, ntiles,
      [&](int stage, int model, int kk) {
        return ydesc0 + ((stage * Tile::kStageBytes + model * Tile::kModelBytes + (kk / 4) * Tile::kBoxBytes +
                          (kk % 4) * 32) >> 4);
      },
      [&] { mbar_wait(x_full, 0); });
#endif
}

// ------------------------------------------------------------------------------------------------
// host helpers

// cuTensorMapEncodeTiled from the driver the runtime uses (no libcuda link), looked up once.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult status{};
    cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &status),
               "relation_kl_fwd_tma: cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (status != cudaDriverEntryPointSuccess || f == nullptr) {
      throw std::runtime_error("relation_kl_fwd_tma: driver has no cuTensorMapEncodeTiled (query result " +
                               std::to_string(static_cast<int>(status)) + ")");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// Whether a side's Y can be a TMA map: the alignment of side_is_vec (16-byte base and strides) and
// no zero stride over an axis of more than one element (TMA strides must be positive multiples
// of 16 bytes).
inline bool fwd_tma_side_ok(const RelationSide& s, int64_t batch, size_t elem) {
  return side_is_vec(s, elem) && s.y_row_stride > 0 && (s.heads_y <= 1 || s.y_head_stride > 0) &&
         (batch <= 1 || s.y_batch_stride > 0);
}

// 4-D map over one side's Y: dims (d, n, heads_y, B), byte strides (row, head, batch), boxes of
// 64 elements x 64 rows x 1 x 1, 128-byte swizzle, out-of-bounds elements read as zeros. Axes of
// extent 1 get a stride of the one below times its extent (any valid value: never stepped over).
template <typename T>
CUtensorMap fwd_tma_key_map(const RelationSide& s, int64_t n, int64_t batch) {
  constexpr size_t e = sizeof(T);
  const cuuint64_t dims[4] = {cuuint64_t(s.head_dim), cuuint64_t(n), cuuint64_t(s.heads_y), cuuint64_t(batch)};
  cuuint64_t strides[3] = {cuuint64_t(s.y_row_stride) * e, cuuint64_t(s.y_head_stride) * e,
                           cuuint64_t(s.y_batch_stride) * e};
  if (s.heads_y <= 1) strides[1] = strides[0] * dims[1];
  if (batch <= 1) strides[2] = strides[1] * dims[2];
  const cuuint32_t box[4] = {64, 64, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type =
      WgmmaType<T>::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, 4, const_cast<void*>(s.y), dims, strides, box, elem_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("relation_kl_fwd_tma: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ", d " + std::to_string(s.head_dim) + ", n " + std::to_string(n) + ", row stride " +
                             std::to_string(s.y_row_stride) + ")");
  }
  return map;
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Version 8 on the params (16-bit T, D = 64 or 128, the bucket of max(d_s, d_t)). Returns false
// where it does not apply (Y rows not 16-byte aligned on either side, zero strides, or indices past
// the TMA's 32-bit coordinates), launching nothing.
template <typename T, int D>
bool relation_kl_fwd_tma_run(const RelationKLParams& p) {
  using Tile = FwdTmaTile<D>;
  if (!fwd_tma_side_ok(p.student, p.batch, sizeof(T)) || !fwd_tma_side_ok(p.teacher, p.batch, sizeof(T)) ||
      p.seq_len >= (int64_t(1) << 31) || p.batch >= (int64_t(1) << 31)) {
    return false;
  }
  const CUtensorMap map_s = fwd_tma_key_map<T>(p.student, p.seq_len, p.batch);
  const CUtensorMap map_t = fwd_tma_key_map<T>(p.teacher, p.seq_len, p.batch);
  auto kernel = relation_kl_fwd_tma_kernel<T, D>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_tma: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, map_s, map_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_tma launch");
  return true;
}

}  // namespace cuda
}  // namespace linear_ard

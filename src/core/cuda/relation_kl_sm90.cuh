// Hopper-only (sm_90a) building blocks of the warpgroup-MMA forward and backward: wgmma descriptors
// of the core-matrix shared-memory tile layout (relation_kl_common.cuh: cm_off, load_tile_cm), the
// wgmma instructions and the descriptors of 128B-swizzled tiles, TMA tensor copies, tensor and bulk reduce-adds,
// mbarriers and named barriers. Kernels using them compile to real code only in the sm_90a pass
// (__CUDA_ARCH_FEAT_SM90_ALL); relation_kl_sm90a_available() tells the host whether the loaded
// image is that one.
#pragma once

#include <cuda.h>  // CUtensorMap (the type only)

#include "relation_kl_common.cuh"  // defines: cp_async16, smem_u32, to_float, cm_off

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LINEAR_ARD_SM90A 1
#endif

namespace linear_ard {
namespace cuda {

// Shared memory written through the generic proxy (cp.async, st.shared) and read next by wgmma
// (async proxy): each writing thread fences after its writes complete, before the barrier.
__device__ __forceinline__ void fence_proxy_async() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// wgmma shared-memory descriptor of a core-matrix tile starting at `p` (bits 0-13 address >> 4,
// 16-29 LBO >> 4, 32-45 SBO >> 4, swizzle mode 0).
template <int D>
__device__ __forceinline__ uint64_t cm_desc(const void* p) {
  const uint64_t addr = (smem_u32(p) & 0x3FFFF) >> 4;
  return addr | (uint64_t(128 >> 4) << 16) | (uint64_t((16 * D) >> 4) << 32);
}

// A wgmma descriptor from its two 32-bit words: lo = address >> 4 (bits 0-13) and LBO (16-29), hi
// = SBO (32-45) and the layout type. Descriptors built as base word + offset on the low word alone
// (shared memory ends below 2^18 bytes, so the address field never carries) stay two 32-bit values
// the compiler can keep in uniform registers and add with one UIADD3 per wgmma, where a 64-bit
// descriptor sum takes a carry chain (forward version 9).
__device__ __forceinline__ uint64_t desc_join(uint32_t lo, uint32_t hi) { return (uint64_t(hi) << 32) | lo; }

__device__ __forceinline__ void wgmma_fence() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accumulator reads/writes across wgmma issue and wait.
template <int NT>
__device__ __forceinline__ void fence_regs(float (&c)[NT][4]) {
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(c[i][e])::"memory");
}

template <typename T>
struct WgmmaType;
template <>
struct WgmmaType<__nv_bfloat16> {
  static constexpr bool kBF16 = true;
};
template <>
struct WgmmaType<__half> {
  static constexpr bool kBF16 = false;
};

// The m64n64k16 wgmma up to its A and B operands (TY: bf16 or f16), and its 32 accumulator operands
// c[i][e] (read and written), shared by wgmma_m64n64k16_ss and _rs.
#define LINEAR_ARD_WGMMA_N64_OP(TY)                                                                        \
  "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                  \
  " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,"      \
  "%26,%27,%28,%29,%30,%31}, "
#define LINEAR_ARD_WGMMA_N64_C                                                                             \
  "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), \
      "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]),            \
      "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]),            \
      "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]),            \
      "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]),            \
      "+f"(c[7][3])

// D(64 x 64, fp32) (+)= A * B, A (64 rows m x 16 columns k) and B (64 rows n x 16 columns k) both
// given by K-major descriptors. Accumulator per warp (rows 16w..16w+15 of the 64) = eight mma.sync
// 16 x 8 C fragments, c[i] = columns 8i..8i+7.
#define LINEAR_ARD_WGMMA_SS_N64(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" LINEAR_ARD_WGMMA_N64_OP(TY)                    \
               "%32, %33, p, 1, 1, 0, 0;\n}\n"                                                             \
               : LINEAR_ARD_WGMMA_N64_C                                                                    \
               : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)))
template <typename T>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&c)[8][4], uint64_t desc_a, uint64_t desc_b,
                                                   bool accumulate) {
#ifdef LINEAR_ARD_SM90A
  if constexpr (WgmmaType<T>::kBF16) {
    LINEAR_ARD_WGMMA_SS_N64("bf16");
  } else {
    LINEAR_ARD_WGMMA_SS_N64("f16");
  }
#endif
}
#undef LINEAR_ARD_WGMMA_SS_N64

// wgmma_m64n64k16_ss with A (64 x 16) from registers instead: a[4] are the mma.sync A fragments of
// the warp's 16 rows of A (rows g, g + 8; columns 2tq, 2tq + 1, then + 8), B K-major by descriptor.
#define LINEAR_ARD_WGMMA_RS_N64(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" LINEAR_ARD_WGMMA_N64_OP(TY)                    \
               "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"                                                  \
               : LINEAR_ARD_WGMMA_N64_C                                                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)))
template <typename T>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&c)[8][4], const uint32_t (&a)[4], uint64_t desc_b,
                                                   bool accumulate) {
#ifdef LINEAR_ARD_SM90A
  if constexpr (WgmmaType<T>::kBF16) {
    LINEAR_ARD_WGMMA_RS_N64("bf16");
  } else {
    LINEAR_ARD_WGMMA_RS_N64("f16");
  }
#endif
}
#undef LINEAR_ARD_WGMMA_RS_N64
#undef LINEAR_ARD_WGMMA_N64_C
#undef LINEAR_ARD_WGMMA_N64_OP

// Rows r and r + 8 of a core-matrix tile [rows][D] as wgmma_m64n64k16_rs's A fragments, one k-step
// of 16 columns a row of `a` (r = 16 warp + g: the warp's 16 rows of a 64-row A). Each load of a
// warp reads one core matrix, 128 contiguous bytes.
template <typename T, int D>
__device__ __forceinline__ void cm_a_frags(uint32_t (&a)[D / 16][4], const T* tile, int r, int tq) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = kk * 16 + 2 * tq;
    a[kk][0] = *reinterpret_cast<const uint32_t*>(tile + cm_off<D>(r, c));
    a[kk][1] = *reinterpret_cast<const uint32_t*>(tile + cm_off<D>(r + 8, c));
    a[kk][2] = *reinterpret_cast<const uint32_t*>(tile + cm_off<D>(r, c + 8));
    a[kk][3] = *reinterpret_cast<const uint32_t*>(tile + cm_off<D>(r + 8, c + 8));
  }
}

// K-major descriptor of a 128B-swizzled tile at shared address `addr` (rows of 64 16-bit elements =
// 128 bytes, as the TMA writes them with CU_TENSOR_MAP_SWIZZLE_128B: 16-byte chunk c of row r at
// chunk c ^ (r mod 8)): SBO = 1024 bytes (next 8 rows), LBO unused (1), base offset 0, layout type 1
// (128-byte swizzle, bits 62-63). A k16 step inside the row adds 32 bytes to the address; the
// hardware swizzles the computed addresses, so the tile must be 1024-byte aligned.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

// MN-major wgmma descriptor (use with trans-b = 1) of 128B-swizzled boxes of kBoxRows rows x 64
// 16-bit elements, boxes side by side in N, read as B[k = box rows][n = box columns]: a swizzle atom
// is 8 k-rows x 64 n (1024 bytes), SBO = 1024 (next 8 k), LBO = one box (next 64 n), layout type 1
// (128-byte swizzle, bits 62-63), base offset 0 (atoms 1024-byte aligned). For the no-swizzle
// layout (cm_desc_mn) the two offsets play the other way round (PTX ISA, "Shared Memory Matrix
// Layout": MN-major canonical layouts).
template <int kBoxRows>
__device__ __forceinline__ uint64_t sw128_desc_mn(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t((kBoxRows * 128) >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// MN-major descriptor of the same core-matrix tile read as B[k = tile rows][n = tile columns]
// (n contiguous inside each core matrix): LBO = 16 D bytes (next 8 rows = next 8 k), SBO = 128
// bytes (next 8 columns = next 8 n). Use with trans-b = 1.
template <int D>
__device__ __forceinline__ uint64_t cm_desc_mn(const void* p) {
  const uint64_t addr = (smem_u32(p) & 0x3FFFF) >> 4;
  return addr | (uint64_t((16 * D) >> 4) << 16) | (uint64_t(128 >> 4) << 32);
}

// D(64 x N, fp32) (+)= A(64 x 16, registers, mma.sync A fragments) * B(16 x N), B MN-major by
// descriptor (trans-b = 1), N in {64, 96, 128}; c[i] = columns 8i..8i+7 as mma.sync C fragments.
template <typename T, int N>
__device__ __forceinline__ void wgmma_m64nNk16_rs_tb(float (&c)[N / 8][4], const uint32_t (&a)[4], uint64_t desc_b,
                                                     bool accumulate) {
#ifdef LINEAR_ARD_SM90A
  static_assert(N == 64 || N == 96 || N == 128, "N");
  if constexpr (N == 64 && WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                   "{%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 64 && !WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                   "{%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 96 && WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, "
                   "{%48,%49,%50,%51}, %52, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3]), "+f"(c[8][0]), "+f"(c[8][1]), "+f"(c[8][2]), "+f"(c[8][3]), "+f"(c[9][0]), "+f"(c[9][1]), "+f"(c[9][2]), "+f"(c[9][3]), "+f"(c[10][0]), "+f"(c[10][1]), "+f"(c[10][2]), "+f"(c[10][3]), "+f"(c[11][0]), "+f"(c[11][1]), "+f"(c[11][2]), "+f"(c[11][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 96 && !WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, "
                   "{%48,%49,%50,%51}, %52, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3]), "+f"(c[8][0]), "+f"(c[8][1]), "+f"(c[8][2]), "+f"(c[8][3]), "+f"(c[9][0]), "+f"(c[9][1]), "+f"(c[9][2]), "+f"(c[9][3]), "+f"(c[10][0]), "+f"(c[10][1]), "+f"(c[10][2]), "+f"(c[10][3]), "+f"(c[11][0]), "+f"(c[11][1]), "+f"(c[11][2]), "+f"(c[11][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 128 && WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
                   "{%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3]), "+f"(c[8][0]), "+f"(c[8][1]), "+f"(c[8][2]), "+f"(c[8][3]), "+f"(c[9][0]), "+f"(c[9][1]), "+f"(c[9][2]), "+f"(c[9][3]), "+f"(c[10][0]), "+f"(c[10][1]), "+f"(c[10][2]), "+f"(c[10][3]), "+f"(c[11][0]), "+f"(c[11][1]), "+f"(c[11][2]), "+f"(c[11][3]), "+f"(c[12][0]), "+f"(c[12][1]), "+f"(c[12][2]), "+f"(c[12][3]), "+f"(c[13][0]), "+f"(c[13][1]), "+f"(c[13][2]), "+f"(c[13][3]), "+f"(c[14][0]), "+f"(c[14][1]), "+f"(c[14][2]), "+f"(c[14][3]), "+f"(c[15][0]), "+f"(c[15][1]), "+f"(c[15][2]), "+f"(c[15][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 128 && !WgmmaType<T>::kBF16) {
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                   "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
                   "{%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
                   : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3]), "+f"(c[8][0]), "+f"(c[8][1]), "+f"(c[8][2]), "+f"(c[8][3]), "+f"(c[9][0]), "+f"(c[9][1]), "+f"(c[9][2]), "+f"(c[9][3]), "+f"(c[10][0]), "+f"(c[10][1]), "+f"(c[10][2]), "+f"(c[10][3]), "+f"(c[11][0]), "+f"(c[11][1]), "+f"(c[11][2]), "+f"(c[11][3]), "+f"(c[12][0]), "+f"(c[12][1]), "+f"(c[12][2]), "+f"(c[12][3]), "+f"(c[13][0]), "+f"(c[13][1]), "+f"(c[13][2]), "+f"(c[13][3]), "+f"(c[14][0]), "+f"(c[14][1]), "+f"(c[14][2]), "+f"(c[14][3]), "+f"(c[15][0]), "+f"(c[15][1]), "+f"(c[15][2]), "+f"(c[15][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
  }
#endif
}

// D(64 x N, fp32) (+)= A * B with both operands MN-major by descriptor (trans-a = trans-b = 1):
// A[m][k] given as a core-matrix tile [k][m] (m contiguous), B[k][n] as one [k][n]; N in {32, 48, 64};
// c[i] = columns 8i..8i+7 as mma.sync C fragments.
template <typename T, int N>
__device__ __forceinline__ void wgmma_m64nNk16_ss_tt(float (&c)[N / 8][4], uint64_t desc_a, uint64_t desc_b,
                                                     bool accumulate) {
#ifdef LINEAR_ARD_SM90A
  static_assert(N == 32 || N == 48 || N == 64, "N");
  if constexpr (N == 32 && WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 32 && !WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 48 && WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n48k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 48 && !WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 64 && WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
  else if constexpr (N == 64 && !WgmmaType<T>::kBF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 1, 1;\n}\n"
                 : "+f"(c[0][0]), "+f"(c[0][1]), "+f"(c[0][2]), "+f"(c[0][3]), "+f"(c[1][0]), "+f"(c[1][1]), "+f"(c[1][2]), "+f"(c[1][3]), "+f"(c[2][0]), "+f"(c[2][1]), "+f"(c[2][2]), "+f"(c[2][3]), "+f"(c[3][0]), "+f"(c[3][1]), "+f"(c[3][2]), "+f"(c[3][3]), "+f"(c[4][0]), "+f"(c[4][1]), "+f"(c[4][2]), "+f"(c[4][3]), "+f"(c[5][0]), "+f"(c[5][1]), "+f"(c[5][2]), "+f"(c[5][3]), "+f"(c[6][0]), "+f"(c[6][1]), "+f"(c[6][2]), "+f"(c[6][3]), "+f"(c[7][0]), "+f"(c[7][1]), "+f"(c[7][2]), "+f"(c[7][3])
                 : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
  }
#endif
}

// TMA bulk reduce-add of `bytes` (a multiple of 16, both addresses 16-byte aligned) of fp32 from
// shared memory into global memory; async proxy, tracked by the issuing thread's bulk groups.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, const float* src, int bytes) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
#endif
}
__device__ __forceinline__ void bulk_commit() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
// Waits until this thread's bulk groups have finished reading shared memory (kRead) or completed.
template <bool kRead>
__device__ __forceinline__ void bulk_wait_all() {
#ifdef LINEAR_ARD_SM90A
  if constexpr (kRead) {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
#endif
}

// ------------------------------------------------------------------------------------------------
// TMA tensor copies (maps from relation_kl_tma_map.cuh): a box into shared memory, completing its
// bytes on an mbarrier whose phase was armed by mbar_arrive_expect_tx.

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

// One box of a 4-D tensor map at coordinates (c0 innermost .. c3) into shared memory at `dst`,
// completing the box's bytes (its zero-filled parts included) on `bar`.
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

// TMA tensor reduce-add: the box of a 4-D fp32 map (tma_dx_map) at shared address `src` (laid out as
// the map's box and swizzle say) added into global memory at coordinates (c0 innermost .. c3);
// elements outside the map's extents are skipped. Async proxy (the generic stores that wrote `src`
// are fenced first), tracked by the issuing thread's bulk groups as bulk_reduce_add_f32.
__device__ __forceinline__ void tma_reduce_add_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2,
                                                  int c3) {
#ifdef LINEAR_ARD_SM90A
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#endif
}

// ------------------------------------------------------------------------------------------------
// Synchronisation of the warp-specialised forward (relation_kl_fwd_wgmma.cuh): shared-memory
// mbarriers between a producer warp and consumer warpgroups, named barriers for the consumers'
// ping-pong, and warpgroup register reallocation (dev/cuda forward version 7 only).

// mbarrier in shared memory expecting `count` arrivals per phase. Make it visible to the other
// threads (fence_mbarrier_init, then a CTA barrier) before any of them uses it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void fence_mbarrier_init() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival (release semantics at CTA scope: this thread's earlier writes, made visible to the
// async proxy by fence_proxy_async where wgmma reads them, are seen by the threads its phase wakes).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(smem_u32(bar))
               : "memory");
#endif
}

// One arrival that also adds `bytes` to the transaction count the phase waits for (the TMA copies
// completing on `bar` count them down).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#endif
}

// Waits (acquire) until the phase of parity `parity` has completed: phase k of a barrier has
// parity k & 1, and the first phase (0) is the one in progress after init. Watchdog (kept in the
// library on purpose): after 2^28 failed tries (each try_wait suspends for a while before it fails:
// seconds in all, where a real wait lasts microseconds) the kernel traps, so that a phase
// bookkeeping error (or a producer that died) shows as a launch failure (an unspecified launch failure
// at the next synchronisation) instead of a hung process. Cheap: the first try is inline, the
// counting retry loop out of line (in SASS: SYNCS.PHASECHK.TRANS64.TRYWAIT inline, the loop apart).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#ifdef LINEAR_ARD_SM90A
  const uint32_t addr = smem_u32(bar);
  uint32_t done;
  for (uint32_t tries = 0;; ++tries) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
    if (done) break;
    if (tries == (1u << 28)) __trap();
  }
#endif
}

// Named barrier `id` (1..15; 0 is __syncthreads) completing when `threads` threads (a multiple of
// 32) have reached it: sync waits there, arrive only counts itself in and goes on.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
#endif
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
#ifdef LINEAR_ARD_SM90A
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
#endif
}

// Warpgroup register reallocation (every warp of the warpgroup executes it): lowers this
// warpgroup's per-thread register count to N (dec) or raises it to N (inc; waits until the
// registers freed by other warpgroups' dec are there). N a multiple of 8 in [24, 256].
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#ifdef LINEAR_ARD_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

}  // namespace cuda
}  // namespace linear_ard

// Host side of the TMA tensor copies (sm_90a kernels): the tensor maps (CUtensorMap) over one side's
// X or Y, [B][heads][n][d] with any strides, read in boxes of 64 elements x `box_rows` rows into
// 128-byte-swizzled shared memory, and over the fp32 dx for tensor reduce-adds (backward
// version 12). cuTensorMapEncodeTiled comes from the driver the runtime already
// uses (cudaGetDriverEntryPointByVersion), so nothing links libcuda.
#pragma once

#include <cuda.h>          // CUtensorMap, cuTensorMapEncodeTiled's enums (types only: no libcuda link)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <stdexcept>
#include <string>

#include "relation_kl_common.cuh"  // defines: side_is_vec, cuda_check
#include "relation_kl_sm90.cuh"    // defines: WgmmaType

namespace linear_ard {
namespace cuda {

// One 4-D operand of a side: base pointer, extents (d, n, heads, B) and element strides.
struct TmaOperand {
  const void* base;
  int64_t cols, rows, heads, batch;
  int64_t row_stride, head_stride, batch_stride;
};

inline TmaOperand tma_y_operand(const RelationSide& s, int64_t n, int64_t batch) {
  return {s.y, s.head_dim, n, s.heads_y, batch, s.y_row_stride, s.y_head_stride, s.y_batch_stride};
}
inline TmaOperand tma_x_operand(const RelationSide& s, int heads, int64_t n, int64_t batch) {
  return {s.x, s.head_dim, n, heads, batch, s.x_row_stride, s.x_head_stride, s.x_batch_stride};
}

// Whether a side can be read by TMA: side_is_vec's alignment (16-byte base and strides), positive
// strides over every axis of more than one element, and coordinates inside 32 bits.
inline bool tma_side_ok(const RelationSide& s, int heads, int64_t n, int64_t batch, size_t elem) {
  auto strides_ok = [&](int64_t rs, int64_t hs, int64_t bs, int64_t h) {
    return rs > 0 && (h <= 1 || hs > 0) && (batch <= 1 || bs > 0);
  };
  return side_is_vec(s, elem) && strides_ok(s.y_row_stride, s.y_head_stride, s.y_batch_stride, s.heads_y) &&
         strides_ok(s.x_row_stride, s.x_head_stride, s.x_batch_stride, heads) && n < (int64_t(1) << 31) &&
         batch < (int64_t(1) << 31);
}

// cuTensorMapEncodeTiled of the driver the runtime uses, looked up once.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult status{};
    cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &status),
               "relation_kl TMA: cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (status != cudaDriverEntryPointSuccess || f == nullptr) {
      throw std::runtime_error("relation_kl TMA: the driver has no cuTensorMapEncodeTiled (query result " +
                               std::to_string(static_cast<int>(status)) + ")");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// cuTensorMapEncodeTiled over `rank` axes of operand o (dims, byte strides of axes 1.., box), unit
// element strides, 128-byte swizzle, elements past the extents read as zeros (and skipped by
// reduce-adds); throws with o's shape on failure.
inline CUtensorMap tma_encode(CUtensorMapDataType type, int rank, const TmaOperand& o, const cuuint64_t* dims,
                              const cuuint64_t* strides, const cuuint32_t* box) {
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, cuuint32_t(rank), const_cast<void*>(o.base), dims, strides, box,
                                          elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("relation_kl TMA: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                             ", d " + std::to_string(o.cols) + ", n " + std::to_string(o.rows) + ", heads " +
                             std::to_string(o.heads) + ", row stride " + std::to_string(o.row_stride) + ")");
  }
  return map;
}

// The map of operand `o` (16-bit T): boxes of 64 elements x box_rows rows x 1 x 1, 128-byte swizzle,
// elements past the extents read as zeros. An axis of extent 1 gets the stride of the axis below
// times its extent (never stepped over, but it must be a valid stride).
template <typename T>
CUtensorMap tma_map(const TmaOperand& o, int box_rows) {
  constexpr size_t e = sizeof(T);
  const cuuint64_t dims[4] = {cuuint64_t(o.cols), cuuint64_t(o.rows), cuuint64_t(o.heads), cuuint64_t(o.batch)};
  cuuint64_t strides[3] = {cuuint64_t(o.row_stride) * e, cuuint64_t(o.head_stride) * e,
                           cuuint64_t(o.batch_stride) * e};
  if (o.heads <= 1) strides[1] = strides[0] * dims[1];
  if (o.batch <= 1) strides[2] = strides[1] * dims[2];
  const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  const CUtensorMapDataType type =
      WgmmaType<T>::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return tma_encode(type, 4, o, dims, strides, box);
}

// The map of a dense fp32 gradient dx [heads_batch][n][d] (d a multiple of 32, dx 16-byte aligned)
// for TMA reduce-adds of boxes of box_rows rows x box_cols columns (a multiple of 32): axes (32
// columns, d / 32 column chunks, n, heads_batch), so that a box lands in shared memory as box_rows x
// box_cols / 32 lines of 128 bytes (32 floats), 128-byte swizzled, and rows >= n are skipped.
inline CUtensorMap tma_dx_map(float* dx, int64_t d, int64_t n, int64_t heads_batch, int box_rows, int box_cols) {
  if (d % 32 != 0 || box_cols % 32 != 0 || heads_batch >= (int64_t(1) << 31) || n >= (int64_t(1) << 31)) {
    throw std::invalid_argument("relation_kl TMA: no dx map for d " + std::to_string(d) + ", n " + std::to_string(n) +
                                ", heads x batch " + std::to_string(heads_batch));
  }
  const TmaOperand o{dx, d, n, heads_batch, 1, d, n * d, heads_batch * n * d};
  const cuuint64_t dims[4] = {32, cuuint64_t(d / 32), cuuint64_t(n), cuuint64_t(heads_batch)};
  const cuuint64_t strides[3] = {32 * sizeof(float), cuuint64_t(d) * sizeof(float), cuuint64_t(n * d) * sizeof(float)};
  const cuuint32_t box[4] = {32, cuuint32_t(box_cols / 32), cuuint32_t(box_rows), 1};
  return tma_encode(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, o, dims, strides, box);
}

}  // namespace cuda
}  // namespace linear_ard

// Relation-KL CUDA entry points: validate, pick the kernels (tensor cores for bf16/fp16 with
// d <= 256, SIMT otherwise; the warpgroup-MMA forward and backward on sm_90a for D <= 128, the
// kernels' tiles by TMA where the inputs allow) and the head-dim bucket, launch on params.stream.
#include <algorithm>
#include <stdexcept>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams, relation_kl_check
#include "relation_kl_common.cuh"         // defines: cuda_check, side_is_vec
#include "relation_kl_cuda_kernels.h"     // defines: RelationKLCudaKernels, relation_kl_*_cuda_kernels
#include "relation_kl_launch.h"           // defines: relation_kl_{fwd,bwd}{,_wgmma,_tma}_launch, simt launchers
#include "relation_kl_tma_map.cuh"        // defines: tma_side_ok

namespace linear_ard {
namespace {

int head_dim_bucket(const RelationKLParams& p) {
  const int d = std::max(p.student.head_dim, p.teacher.head_dim);
  if (d <= 64) return 64;
  if (d <= 96) return 96;
  if (d <= 128) return 128;
  if (d <= 256) return 256;
  return 0;
}

// Tensor cores for kDefault (bf16/fp16, d <= 256) and kMmaSync (which refuses other inputs).
bool use_tensor_cores(const RelationKLParams& p, RelationKLCudaKernels kernels) {
  const bool tc_ok = (p.dtype == DType::kBF16 || p.dtype == DType::kF16) && head_dim_bucket(p) != 0;
  if (kernels == RelationKLCudaKernels::kMmaSync && !tc_ok) {
    throw std::invalid_argument("relation_kl CUDA: the mma.sync kernels need bf16/fp16 inputs with head_dim <= 256");
  }
  return kernels != RelationKLCudaKernels::kSimt && tc_ok;
}

// The warpgroup-MMA forward and backward: kDefault, D <= 128, a device that loads the sm_90a image
// (on tensor-core inputs: the callers ask only after use_tensor_cores).
bool use_wgmma(int bucket, RelationKLCudaKernels kernels) {
  return kernels == RelationKLCudaKernels::kDefault && bucket <= 128 && cuda::relation_kl_sm90a_available();
}

// The wgmma kernels' tiles by TMA (the forward's key tiles, the backward's X tiles): D = 64 or 128
// and both sides readable by TMA.
bool use_tma(const RelationKLParams& p, int bucket) {
  const size_t e = dtype_size(p.dtype);
  return (bucket == 64 || bucket == 128) && cuda::tma_side_ok(p.student, p.heads, p.seq_len, p.batch, e) &&
         cuda::tma_side_ok(p.teacher, p.heads, p.seq_len, p.batch, e);
}

void check_simt_supported(const RelationKLParams& p) {
  if (p.dtype == DType::kF64) throw std::invalid_argument("relation_kl CUDA: dtype f64 is CPU-only");
  if (std::max(p.student.head_dim, p.teacher.head_dim) > cuda::kSimtMaxHeadDim) {
    throw std::invalid_argument("relation_kl CUDA: head_dim > 256 is not supported");
  }
}

// Calls f(T{}, std::integral_constant<int, D>{}) for the params' 16-bit type and bucket.
template <typename F>
void dispatch_tc(const RelationKLParams& p, F&& f) {
  auto by_type = [&](auto t) {
    switch (head_dim_bucket(p)) {
      case 64: return f(t, std::integral_constant<int, 64>{});
      case 96: return f(t, std::integral_constant<int, 96>{});
      case 128: return f(t, std::integral_constant<int, 128>{});
      default: return f(t, std::integral_constant<int, 256>{});
    }
  };
  if (p.dtype == DType::kBF16) {
    by_type(__nv_bfloat16{});
  } else {
    by_type(__half{});
  }
}

// The library's launch order (RelationKLParams::cta_head_group = 0): causal relations in groups of
// (batch, head) pairs, heaviest tiles first, as many pairs as keep the group's key rows (both models)
// within about kCausalGroupKeyBytes of L2, at most kCausalHeadGroupMax: 8 pairs up to 2K at d = 128,
// 4 at 4K, 2 at 8K, 1 from 16K (measured on one H200, docs/kernel.md "Launch order"); the others one
// pair after another (all their tiles weigh the same, and a pair's tiles share their L2 lines).
constexpr int64_t kCausalGroupKeyBytes = int64_t(8) << 20;
constexpr int64_t kCausalHeadGroupMax = 8;
int causal_head_group(const RelationKLParams& p) {
  const int64_t pair_bytes = 2 * std::max<int64_t>(p.seq_len, 1) *
                             std::max(p.student.head_dim, p.teacher.head_dim) * int64_t(dtype_size(p.dtype));
  return static_cast<int>(std::clamp<int64_t>(kCausalGroupKeyBytes / pair_bytes, 1, kCausalHeadGroupMax));
}
RelationKLParams with_launch_order(const RelationKLParams& p) {
  RelationKLParams q = p;
  if (q.cta_head_group == 0) q.cta_head_group = p.causal ? causal_head_group(p) : 1;
  return q;
}

// The tensor-core kernel of one pass (kBackward) for the params' type and bucket: on warpgroup MMA
// where use_wgmma says so, else mma.sync. The deterministic backward runs the column-parallel
// launcher (which then computes dY alone) and after it the row-parallel dX pass of the same family.
template <bool kBackward>
void launch_tc(const RelationKLParams& params, RelationKLCudaKernels kernels) {
  const RelationKLParams p = with_launch_order(params);
  const size_t e = dtype_size(p.dtype);
  const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
  dispatch_tc(p, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    if constexpr (D <= 128) {
      if (use_wgmma(D, kernels)) {
        bool tma = false;
        if constexpr (D == 64 || D == 128) tma = use_tma(p, D);
        if constexpr (kBackward) {
          if constexpr (D == 64 || D == 128) {
            if (tma) cuda::relation_kl_bwd_tma_launch<T, D>(p);
          }
          if (!tma) cuda::relation_kl_bwd_wgmma_launch<T, D>(p, vs, vt);
          if (p.deterministic) cuda::relation_kl_bwd_rows_wgmma_launch<T, D>(p, vs, vt);
          return;
        }
        if constexpr (D == 64 || D == 128) {
          if (tma) return cuda::relation_kl_fwd_tma_launch<T, D>(p);
        }
        return cuda::relation_kl_fwd_wgmma_launch<T, D>(p, vs, vt);
      }
    }
    if constexpr (kBackward) {
      cuda::relation_kl_bwd_launch<T, D>(p, vs, vt);
      if (p.deterministic) cuda::relation_kl_bwd_rows_launch<T, D>(p, vs, vt);
      return;
    }
    cuda::relation_kl_fwd_launch<T, D>(p, vs, vt);
  });
}

template <typename F>
void dispatch_simt(const RelationKLParams& p, F&& f) {
  switch (p.dtype) {
    case DType::kF32: return f(float{});
    case DType::kBF16: return f(__nv_bfloat16{});
    default: return f(__half{});
  }
}

}  // namespace

void relation_kl_forward_cuda_kernels(const RelationKLParams& p, RelationKLCudaKernels kernels) {
  relation_kl_check(p, false);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return;
  if (use_tensor_cores(p, kernels)) {
    launch_tc<false>(p, kernels);
  } else {
    check_simt_supported(p);
    dispatch_simt(p, [&](auto t) { cuda::relation_kl_simt_fwd_launch<decltype(t)>(p); });
  }
}

void relation_kl_backward_cuda_kernels(const RelationKLParams& p, RelationKLCudaKernels kernels) {
  relation_kl_check(p, true);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return;
  if (use_tensor_cores(p, kernels)) {
    // dX arrives through atomics (on sm_90a also TMA bulk reduce-adds) from every key tile: start
    // from zero. The deterministic backward writes every element of dx with plain stores instead.
    if (!p.deterministic) {
      const size_t dx_bytes = sizeof(float) * p.batch * p.heads * p.seq_len * p.student.head_dim;
      cuda::cuda_check(cudaMemsetAsync(p.dx, 0, dx_bytes, static_cast<cudaStream_t>(p.stream)),
                       "relation_kl_backward: zero dx");
    }
    launch_tc<true>(p, kernels);
  } else {
    check_simt_supported(p);
    dispatch_simt(p, [&](auto t) { cuda::relation_kl_simt_bwd_launch<decltype(t)>(p); });
  }
}

RelationKLParams relation_kl_cuda_launch_order(const RelationKLParams& p) { return with_launch_order(p); }

const char* relation_kl_forward_cuda_kernel_name(const RelationKLParams& p, RelationKLCudaKernels kernels) {
  if (!use_tensor_cores(p, kernels)) return "simt";
  const int bucket = head_dim_bucket(p);
  if (!use_wgmma(bucket, kernels)) return "mma.sync";
  return use_tma(p, bucket) ? "wgmma+tma" : "wgmma";
}

const char* relation_kl_backward_cuda_kernel_name(const RelationKLParams& p, RelationKLCudaKernels kernels) {
  // The same choice as the forward's (kept as its own entry point: the two may part again).
  return relation_kl_forward_cuda_kernel_name(p, kernels);
}

void relation_kl_forward_cuda(const RelationKLParams& p) {
  relation_kl_forward_cuda_kernels(p, RelationKLCudaKernels::kDefault);
}

void relation_kl_backward_cuda(const RelationKLParams& p) {
  relation_kl_backward_cuda_kernels(p, RelationKLCudaKernels::kDefault);
}

}  // namespace linear_ard

// Relation-KL CUDA entry points: validate, pick the kernel (tensor cores for bf16/fp16 with
// d <= 256, SIMT otherwise) and the head-dim bucket, launch on params.stream.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams, relation_kl_check
#include "relation_kl_common.cuh"         // defines: cuda_check, side_is_vec
#include "relation_kl_launch.h"           // defines: relation_kl_{fwd,bwd,simt_fwd,simt_bwd}_launch

namespace linear_ard {
namespace {

// LINEAR_ARD_CUDA_PATH=simt forces the SIMT kernels: the checks use it to compare both paths.
bool force_simt() {
  const char* v = std::getenv("LINEAR_ARD_CUDA_PATH");
  return v != nullptr && std::strcmp(v, "simt") == 0;
}

// Backward kernel variants, chosen per process (read once) for comparing them without rebuilding:
// LINEAR_ARD_CUDA_BWD_VARIANT = default (unset: wgmma2 where usable, else mma.sync) | mma | wgmma |
// wgmma2 (relation_kl_bwd_wgmma.cuh says what they change). The wgmma ones apply to 16-bit inputs
// with D <= 128 on a compute-capability 9.0 device that can load the sm_90a image; elsewhere the
// mma.sync kernel runs (with one warning on stderr when a wgmma variant was asked for by name).
// wgmma2 passes every reference check on an H200 and is 8-9 % faster than mma.sync (docs/kernel.md).
// The forward has one kernel (mma.sync): a wgmma forward was measured 13-16 % slower and removed;
// LINEAR_ARD_CUDA_FWD_VARIANT accepts only default / mma.
enum class Variant { kDefault, kMma, kWgmma, kWgmma2 };

Variant variant_from_env(const char* name) {
  const char* v = std::getenv(name);
  const bool bwd = std::strcmp(name, "LINEAR_ARD_CUDA_BWD_VARIANT") == 0;
  if (v == nullptr || *v == 0 || std::strcmp(v, "default") == 0) return Variant::kDefault;
  if (std::strcmp(v, "mma") == 0) return Variant::kMma;
  if (bwd && std::strcmp(v, "wgmma") == 0) return Variant::kWgmma;
  if (bwd && std::strcmp(v, "wgmma2") == 0) return Variant::kWgmma2;
  throw std::invalid_argument(std::string("relation_kl CUDA: ") + name + "=" + v +
                              (bwd ? " (expected default, mma, wgmma or wgmma2)" : " (expected default or mma)"));
}
Variant fwd_variant() {
  static const Variant v = variant_from_env("LINEAR_ARD_CUDA_FWD_VARIANT");
  return v;
}
Variant bwd_variant() {
  static const Variant v = variant_from_env("LINEAR_ARD_CUDA_BWD_VARIANT");
  return v;
}
bool wgmma_usable() {
  const bool ok = cuda::relation_kl_sm90a_available();
  static bool warned = false;
  if (!ok && !warned) {
    warned = true;
    std::fprintf(stderr, "linear_ard: wgmma kernel variant needs an sm_90a image on a 9.0 device; using default\n");
  }
  return ok;
}

int head_dim_bucket(const RelationKLParams& p) {
  const int d = std::max(p.student.head_dim, p.teacher.head_dim);
  if (d <= 64) return 64;
  if (d <= 96) return 96;
  if (d <= 128) return 128;
  if (d <= 256) return 256;
  return 0;
}

bool use_tensor_cores(const RelationKLParams& p) {
  return (p.dtype == DType::kBF16 || p.dtype == DType::kF16) && head_dim_bucket(p) != 0 && !force_simt();
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

template <typename F>
void dispatch_simt(const RelationKLParams& p, F&& f) {
  switch (p.dtype) {
    case DType::kF32: return f(float{});
    case DType::kBF16: return f(__nv_bfloat16{});
    default: return f(__half{});
  }
}

}  // namespace

size_t relation_kl_backward_workspace_size_cuda(const RelationKLParams&) { return 0; }

void relation_kl_forward_cuda(const RelationKLParams& p) {
  relation_kl_check(p, false);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return;
  if (use_tensor_cores(p)) {
    (void)fwd_variant();  // default and mma are the same kernel; anything else is refused here
    const size_t e = dtype_size(p.dtype);
    const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
    dispatch_tc(p, [&](auto t, auto d) {
      using T = decltype(t);
      constexpr int D = decltype(d)::value;
      cuda::relation_kl_fwd_launch<T, D>(p, vs, vt);
    });
  } else {
    check_simt_supported(p);
    dispatch_simt(p, [&](auto t) { cuda::relation_kl_simt_fwd_launch<decltype(t)>(p); });
  }
}

void relation_kl_backward_cuda(const RelationKLParams& p) {
  relation_kl_check(p, true);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return;
  if (use_tensor_cores(p)) {
    // dX arrives through atomics from every key tile: start from zero.
    const size_t dx_bytes = sizeof(float) * p.batch * p.heads * p.seq_len * p.student.head_dim;
    cuda::cuda_check(cudaMemsetAsync(p.dx, 0, dx_bytes, static_cast<cudaStream_t>(p.stream)),
                     "relation_kl_backward: zero dx");
    const size_t e = dtype_size(p.dtype);
    const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
    dispatch_tc(p, [&](auto t, auto d) {
      using T = decltype(t);
      constexpr int D = decltype(d)::value;
      if constexpr (D <= 128) {
        const Variant v = bwd_variant();
        if (v == Variant::kDefault && cuda::relation_kl_sm90a_available())
          return cuda::relation_kl_bwd_wgmma_launch<T, D, true>(p, vs, vt);
        if ((v == Variant::kWgmma || v == Variant::kWgmma2) && wgmma_usable()) {
          if (v == Variant::kWgmma2) return cuda::relation_kl_bwd_wgmma_launch<T, D, true>(p, vs, vt);
          return cuda::relation_kl_bwd_wgmma_launch<T, D, false>(p, vs, vt);
        }
      }
      cuda::relation_kl_bwd_launch<T, D>(p, vs, vt);
    });
  } else {
    check_simt_supported(p);
    dispatch_simt(p, [&](auto t) { cuda::relation_kl_simt_bwd_launch<decltype(t)>(p); });
  }
}

}  // namespace linear_ard

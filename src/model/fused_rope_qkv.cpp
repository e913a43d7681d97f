// The torch side of the fused q/k/v split + RoPE: checks, outputs, and the autograd rule whose
// backward is the kernel's gradient (src/model/cuda/rope_qkv.cu).
#include "linear_ard/model/fused_rope_qkv.h"

#include <stdexcept>

#include "fused_kernels_glue.h"  // defines: fused_dtype, fused_enabled, fused_stream (CUDA builds)

#ifdef LINEAR_ARD_MODEL_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace linear_ard::model {
#ifdef LINEAR_ARD_MODEL_CUDA
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

cuda::RopeQkvShape rope_qkv_shape(const torch::Tensor& qkv, const torch::Tensor& cos, int64_t heads,
                                  int64_t kv_heads, int64_t head_dim) {
  return {qkv.size(0) * qkv.size(1), qkv.size(1), static_cast<int>(heads), static_cast<int>(kv_heads),
          static_cast<int>(head_dim), static_cast<int>(cos.size(-1)), cos.size(0) != 1};
}

// Outputs [B, n, heads, d] each (the caller transposes them to [B, heads, n, d] views).
class RopeQkvFunction : public torch::autograd::Function<RopeQkvFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& qkv, const torch::Tensor& cos,
                               const torch::Tensor& sin_signed, int64_t heads, int64_t kv_heads, int64_t head_dim) {
    const c10::cuda::CUDAGuard guard(qkv.device());
    const int64_t b = qkv.size(0), n = qkv.size(1);
    auto q = torch::empty({b, n, heads, head_dim}, qkv.options());
    auto k = torch::empty({b, n, kv_heads, head_dim}, qkv.options());
    auto v = torch::empty({b, n, kv_heads, head_dim}, qkv.options());
    cuda::rope_qkv_forward(rope_qkv_shape(qkv, cos, heads, kv_heads, head_dim), *fused_dtype(qkv), qkv.data_ptr(),
                           cos.data_ptr(), sin_signed.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                           fused_stream(qkv));
    ctx->save_for_backward({cos, sin_signed});
    ctx->saved_data["shape"] = std::vector<int64_t>{b, n, heads, kv_heads, head_dim};
    return {q, k, v};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto shape = ctx->saved_data["shape"].toIntVector();
    const int64_t b = shape[0], n = shape[1], heads = shape[2], kv_heads = shape[3], d = shape[4];
    const torch::Tensor& cos = saved[0];
    const c10::cuda::CUDAGuard guard(cos.device());
    const int64_t head_counts[3] = {heads, kv_heads, kv_heads};
    for (int i = 0; i < 3; ++i) {  // an output no loss reached has no gradient: zeros
      grads[i] = grads[i].defined() ? grads[i].contiguous()
                                    : torch::zeros({b, n, head_counts[i], d}, cos.options());
    }
    auto dqkv = torch::empty({b, n, (heads + 2 * kv_heads) * d}, grads[0].options());
    cuda::rope_qkv_backward(rope_qkv_shape(dqkv, cos, heads, kv_heads, d), *fused_dtype(dqkv), grads[0].data_ptr(),
                            grads[1].data_ptr(), grads[2].data_ptr(), cos.data_ptr(), saved[1].data_ptr(),
                            dqkv.data_ptr(), fused_stream(dqkv));
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool rope_qkv_fused_supported(const torch::Tensor& qkv, const RopeCosSin& rope) {
  const auto& c = rope.cos;
  return fused_enabled() && qkv.is_cuda() && qkv.dim() == 3 && qkv.is_contiguous() && fused_dtype(qkv).has_value() &&
         c.dim() == 3 && c.device() == qkv.device() && c.scalar_type() == qkv.scalar_type() &&
         rope.sin_signed.sizes() == c.sizes() && c.size(1) == qkv.size(1) &&
         (c.size(0) == 1 || c.size(0) == qkv.size(0)) && c.size(-1) % 2 == 0;
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> rope_qkv_fused(const torch::Tensor& qkv,
                                                                       const RopeCosSin& rope, int64_t heads,
                                                                       int64_t kv_heads, int64_t head_dim) {
  if (!rope_qkv_fused_supported(qkv, rope))
    throw std::invalid_argument("rope_qkv_fused: qkv " + c10::str(qkv.sizes(), " ", qkv.scalar_type(), " on ",
                                qkv.device()) + " with cos " + c10::str(rope.cos.sizes(), " ", rope.cos.scalar_type()) +
                                " is not a case the fused kernel takes (rope_qkv_fused_supported)");
  if (qkv.size(2) != (heads + 2 * kv_heads) * head_dim || rope.cos.size(-1) > head_dim)
    throw std::invalid_argument("rope_qkv_fused: qkv's last dim " + std::to_string(qkv.size(2)) + " is not (" +
                                std::to_string(heads) + " + 2 x " + std::to_string(kv_heads) + ") x " +
                                std::to_string(head_dim) + ", or rotary dim " + std::to_string(rope.cos.size(-1)) +
                                " > head dim");
  auto out = RopeQkvFunction::apply(qkv, rope.cos.contiguous(), rope.sin_signed.contiguous(), heads, kv_heads,
                                    head_dim);
  return {out[0].transpose(1, 2), out[1].transpose(1, 2), out[2].transpose(1, 2)};
}

#else

bool rope_qkv_fused_supported(const torch::Tensor&, const RopeCosSin&) { return false; }

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> rope_qkv_fused(const torch::Tensor&, const RopeCosSin&,
                                                                       int64_t, int64_t, int64_t) {
  throw std::runtime_error("rope_qkv_fused: this build has no CUDA kernels (LINEAR_ARD_WITH_CUDA=OFF)");
}

#endif
}  // namespace linear_ard::model

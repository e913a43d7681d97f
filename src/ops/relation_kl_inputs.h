// Defines RelationKLInputs: the validated arguments of the relation_kl ops, and their translation
// into the core's RelationKLParams (pointers, strides, sizes) for the device implementations.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>
#include <vector>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams, RelationSide, DType

namespace linear_ard::ops {

// Arguments after validation. Every tensor here has a contiguous last dim (a strided last dim was
// copied), so the core can address it through batch/head/row strides alone.
struct RelationKLInputs {
  at::Tensor x_s;
  at::Tensor y_s;  // x_s itself for a self-relation (y_s = None)
  at::Tensor x_t;
  at::Tensor y_t;  // x_t itself for a self-relation (y_t = None)
  bool student_self = false;  // y_s was None: the Y gradient is added into dx_s, no dy_s
  at::Tensor key_mask;        // [B, n] bool, or undefined: every key visible
  bool causal = false;
  double scale_s = 0.0;  // resolved: 1/sqrt(d_s) unless given
  double scale_t = 0.0;
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t seq_len = 0;
};

// Checks every argument of relation_kl (ranks, sizes, head divisibility, dtypes, devices, scales,
// the mask, teacher requires_grad) and throws c10::Error naming the argument on the first failure.
RelationKLInputs relation_kl_inputs_make(const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
                                         const at::Tensor& x_t, const std::optional<at::Tensor>& y_t,
                                         const std::optional<at::Tensor>& key_mask, bool causal,
                                         std::optional<double> scale_s,
                                         std::optional<double> scale_t);

// dtype of kl, the LSEs, grad_kl and the core's gradient buffers: float32, float64 for float64
// inputs (the core's fp64 rule, which gradcheck needs).
at::ScalarType relation_kl_output_dtype(const RelationKLInputs& in);

// Forward outputs kl, lse_s, lse_t: [B, H, n], dense, on the inputs' device.
std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl_forward_outputs(
    const RelationKLInputs& in);

// Forward outputs allocated and the params that point at inputs and outputs.
struct RelationKLForward {
  at::Tensor kl;
  at::Tensor lse_s;
  at::Tensor lse_t;
  RelationKLParams params;
};
RelationKLForward relation_kl_forward_prepare(const RelationKLInputs& in);

// Backward buffers (gradients the core writes; dense copies of grad_kl and the LSEs) and
// the params that point at them (deterministic: RelationKLParams::deterministic). grad_kl, lse_s
// and lse_t are checked against the inputs' shape.
struct RelationKLBackward {
  at::Tensor grad_kl;
  at::Tensor lse_s;
  at::Tensor lse_t;
  at::Tensor dx;  // [B, H, n, d_s] in the output dtype
  at::Tensor dy;  // [B, H_y, n, d_s] in the output dtype, undefined for a self-relation
  RelationKLParams params;
};
RelationKLBackward relation_kl_backward_prepare(const RelationKLInputs& in, const at::Tensor& grad_kl,
                                               const at::Tensor& lse_s, const at::Tensor& lse_t,
                                               bool deterministic = false);

// Runs a core entry point (forward or backward, CPU or CUDA), turning its exceptions into
// c10::Error.
void relation_kl_core_run(void (*entry)(const RelationKLParams&), const RelationKLParams& params);

// The op's result once the core has run: [dx_s] or [dx_s, dy_s] in the student's dtype.
std::vector<at::Tensor> relation_kl_backward_results(const RelationKLInputs& in,
                                                     const RelationKLBackward& bwd);

}  // namespace linear_ard::ops

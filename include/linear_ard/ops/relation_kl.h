// Defines the C++ entry points of the linear_ard::relation_kl op family (through the PyTorch
// dispatcher, so CPU/CUDA/Meta kernels and autograd apply as for a Python caller). Link
// linear_ard_ops. docs/operator-api.md describes the arguments.
#pragma once

#include <ATen/Tensor.h>

#include <optional>
#include <tuple>
#include <vector>

namespace linear_ard::ops {

// Per-row KL(R_t || R_s) and each model's row LSE, [B, H, n] float32 (float64 for
// float64 inputs), where for model m
// R_m = softmax_rows(scale_m X_m Y_m^T + M). X: [B, H, n, d_m], Y: [B, H_y, n, d_m] with H_y
// dividing H; y = nullopt is the self-relation (Y is X). key_mask: [B, n] bool, true = visible key.
// scale_m defaults to 1/sqrt(d_m). Differentiable in x_s and y_s; teacher tensors must not
// require grad; lse_s and lse_t carry no gradient. deterministic: the backward gives the same bits
// on every run (RelationKLParams::deterministic; the forward always does).
std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl(
    const at::Tensor& x_s, const std::optional<at::Tensor>& y_s, const at::Tensor& x_t,
    const std::optional<at::Tensor>& y_t, const std::optional<at::Tensor>& key_mask = std::nullopt,
    bool causal = false, std::optional<double> scale_s = std::nullopt,
    std::optional<double> scale_t = std::nullopt, bool deterministic = false);

// The student's gradients of sum(grad_kl * kl), given the forward's lse_s and lse_t:
// {dx_s} when y_s is nullopt (the Y gradient added in), else {dx_s, dy_s}; in x_s's dtype.
std::vector<at::Tensor> relation_kl_backward(
    const at::Tensor& grad_kl, const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
    const at::Tensor& x_t, const std::optional<at::Tensor>& y_t, const at::Tensor& lse_s,
    const at::Tensor& lse_t, const std::optional<at::Tensor>& key_mask = std::nullopt,
    bool causal = false, std::optional<double> scale_s = std::nullopt,
    std::optional<double> scale_t = std::nullopt, bool deterministic = false);

}  // namespace linear_ard::ops

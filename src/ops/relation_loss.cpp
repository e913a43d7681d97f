// relation_loss (include/linear_ard/ops/relation_loss.h): the op linear_ard::relation_loss,
// composed of relation_kl calls (so autograd comes from relation_kl's), and its C++ entry point.
#include "linear_ard/ops/relation_loss.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <array>
#include <cmath>

#include "linear_ard/ops/relation_kl.h"  // defines: relation_kl

namespace linear_ard::ops {
namespace {

struct RelationTerm {
  const char* name;     // "Q/Q", for messages
  const char* student;  // argument names, for messages
  const char* teacher;
  const char* lambda;
};
constexpr std::array<RelationTerm, 3> kTerms = {{
    {"Q/Q", "q_s", "q_t", "lambda_q"},
    {"K/K", "k_s", "k_t", "lambda_k"},
    {"V/V", "v_s", "v_t", "lambda_v"},
}};

// relation_kl names its arguments x_s/x_t; say which relation tensors those were.
at::Tensor relation_term_mean(const RelationTerm& term, const at::Tensor& student,
                              const at::Tensor& teacher, const std::optional<at::Tensor>& key_mask,
                              bool causal, bool deterministic) {
  try {
    const at::Tensor kl = std::get<0>(relation_kl(student, std::nullopt, teacher, std::nullopt, key_mask, causal,
                                                  std::nullopt, std::nullopt, deterministic));
    return relation_kl_row_mean(kl, key_mask);
  } catch (const c10::Error& error) {
    TORCH_CHECK(false, "linear_ard::relation_loss: ", term.name, " relation (x_s = ", term.student,
                ", x_t = ", term.teacher, "): ", error.what_without_backtrace());
  }
}

std::tuple<at::Tensor, at::Tensor> relation_loss_kernel(
    const at::Tensor& q_s, const at::Tensor& k_s, const at::Tensor& v_s, const at::Tensor& q_t,
    const at::Tensor& k_t, const at::Tensor& v_t, const std::optional<at::Tensor>& key_mask,
    bool causal, double lambda_q, double lambda_k, double lambda_v, bool deterministic) {
  const std::array<const at::Tensor*, 3> students = {&q_s, &k_s, &v_s};
  const std::array<const at::Tensor*, 3> teachers = {&q_t, &k_t, &v_t};
  const std::array<double, 3> lambdas = {lambda_q, lambda_k, lambda_v};
  for (size_t r = 0; r < kTerms.size(); ++r) {
    TORCH_CHECK(std::isfinite(lambdas[r]) && lambdas[r] >= 0.0, "linear_ard::relation_loss: ",
                kTerms[r].lambda, " must be finite and >= 0, got ", lambdas[r]);
  }
  // Losses come out in relation_kl's output dtype: float32, float64 for float64 inputs.
  const auto scalar_options =
      q_s.options().dtype(q_s.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  at::Tensor total = at::zeros({}, scalar_options);
  std::array<at::Tensor, 3> means;
  for (size_t r = 0; r < kTerms.size(); ++r) {
    if (lambdas[r] == 0.0) {
      means[r] = at::zeros({}, scalar_options);
      continue;
    }
    means[r] = relation_term_mean(kTerms[r], *students[r], *teachers[r], key_mask, causal, deterministic);
    total = total + lambdas[r] * means[r];
  }
  return {total, at::stack(means)};
}

}  // namespace

at::Tensor relation_kl_row_mean(const at::Tensor& kl, const std::optional<at::Tensor>& key_mask) {
  if (!key_mask.has_value() || !key_mask->defined()) return kl.mean();
  // A real query row sees itself, so it has a visible key; padded query rows are left out.
  const at::Tensor valid = key_mask->unsqueeze(1).expand_as(kl);
  const at::Tensor rows = valid.sum().to(at::kFloat);
  return at::where(valid, kl, at::zeros({}, kl.options())).sum() / rows.clamp_min(1.0);
}

RelationLoss relation_loss(const RelationQKV& student, const RelationQKV& teacher,
                           const RelationLossOptions& options) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("linear_ard::relation_loss", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(
              const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
              const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, bool, double,
              double, double, bool)>();
  auto [total, relation_losses] =
      op.call(student.q, student.k, student.v, teacher.q, teacher.k, teacher.v, options.key_mask,
              options.causal, options.lambda_q, options.lambda_k, options.lambda_v, options.deterministic);
  return {total, relation_losses};
}

TORCH_LIBRARY_IMPL(linear_ard, CompositeImplicitAutograd, m) {
  m.impl("relation_loss", &relation_loss_kernel);
}

}  // namespace linear_ard::ops

// lm_head_cross_entropy / lm_head_loss (the chunked LM head + cross-entropy) against the unfused
// computation on materialised logits (linear, .float(), torch's cross_entropy, autograd): loss,
// per-position CE and the gradients of the hidden states, the weight and the bias, in fp32 and bf16,
// odd sizes and chunk sizes, ignored targets and zero-weight positions, tied embeddings. The
// tolerance is FlashAttention's rule against an fp64 computation: at most twice the unfused
// same-dtype error, plus a floor far below the dtype's rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/lm_head_loss.h"  // defines: lm_head_cross_entropy, lm_head_loss, kLmIgnoreIndex
#include "tiny_config.h"                    // defines: tiny_config

namespace {

using namespace linear_ard::model;

struct Problem {
  torch::Tensor hidden, weight, bias, targets, token_weights;
};

// N positions, width h, vocabulary V; about a fifth of the targets ignored and of the weights 0.
Problem make_problem(int64_t n, int64_t h, int64_t v, bool bias, bool weighted, uint64_t seed) {
  torch::manual_seed(seed);
  Problem p;
  p.hidden = torch::randn({n, h}, torch::kDouble);
  p.weight = torch::randn({v, h}, torch::kDouble) * 0.3;
  if (bias) p.bias = torch::randn({v}, torch::kDouble);
  p.targets = torch::randint(0, v, {n}, torch::kLong);
  p.targets.masked_fill_(torch::rand({n}) < 0.2, kLmIgnoreIndex);
  if (weighted) p.token_weights = torch::rand({n}).masked_fill_(torch::rand({n}) < 0.2, 0.0);
  return p;
}

// Loss, CE and gradients (hidden, weight, bias) of one way of computing it, inputs cast to `dtype`.
struct Result {
  torch::Tensor loss, ce, d_hidden, d_weight, d_bias;
};

torch::Tensor leaf(const torch::Tensor& t, torch::ScalarType dtype) {
  return t.defined() ? t.to(dtype).detach().requires_grad_() : torch::Tensor();
}

Result finish(const torch::Tensor& loss, const torch::Tensor& ce, const torch::Tensor& h, const torch::Tensor& w,
              const torch::Tensor& b) {
  loss.backward();
  Result r{loss.detach().to(torch::kDouble), ce.detach().to(torch::kDouble), h.grad().to(torch::kDouble),
           w.grad().to(torch::kDouble), b.defined() ? b.grad().to(torch::kDouble) : torch::Tensor()};
  return r;
}

Result unfused(const Problem& p, torch::ScalarType dtype) {
  const torch::Tensor h = leaf(p.hidden, dtype), w = leaf(p.weight, dtype), b = leaf(p.bias, dtype);
  torch::Tensor logits = torch::nn::functional::linear(h, w, b);
  if (dtype != torch::kDouble) logits = logits.to(torch::kFloat);  // as the trainer's loss did
  namespace F = torch::nn::functional;
  const torch::Tensor ce = F::cross_entropy(
      logits, p.targets, F::CrossEntropyFuncOptions().reduction(torch::kNone).ignore_index(kLmIgnoreIndex));
  torch::Tensor weight = p.targets.ne(kLmIgnoreIndex).to(ce.scalar_type());
  if (p.token_weights.defined()) weight = weight * p.token_weights.to(ce.scalar_type());
  return finish((ce * weight).sum() / weight.sum(), ce, h, w, b);
}

Result fused(const Problem& p, torch::ScalarType dtype, int64_t chunk) {
  const torch::Tensor h = leaf(p.hidden, dtype), w = leaf(p.weight, dtype), b = leaf(p.bias, dtype);
  const LmHeadLoss r = lm_head_cross_entropy(h, w, b, p.targets, p.token_weights, chunk);
  EXPECT_EQ(r.loss.scalar_type(), torch::kFloat);
  EXPECT_FALSE(r.token_ce.requires_grad());
  return finish(r.loss, r.token_ce, h, w, b);
}

// max |got - ref| <= 2 max |low - ref| + floor * max |ref|, where ref is fp64 and low the unfused
// computation in the tested dtype.
void expect_within_rule(const torch::Tensor& got, const torch::Tensor& low, const torch::Tensor& ref, double floor,
                        const std::string& what) {
  if (!ref.defined()) return;
  const double err = (got - ref).abs().max().item<double>(), err_low = (low - ref).abs().max().item<double>();
  const double scale = ref.abs().max().item<double>();
  EXPECT_LE(err, 2 * err_low + floor * scale) << what << ": error " << err << ", unfused same-dtype " << err_low;
}

void check(const Problem& p, torch::ScalarType dtype, int64_t chunk, const std::string& name) {
  const Result ref = unfused(p, torch::kDouble), low = unfused(p, dtype), got = fused(p, dtype, chunk);
  const double floor = dtype == torch::kFloat ? 1e-6 : std::ldexp(1.0, -12);
  const std::string what = name + " (" + std::string(c10::toString(dtype)) + ", chunk " + std::to_string(chunk) + ")";
  expect_within_rule(got.loss, low.loss, ref.loss, floor, what + " loss");
  expect_within_rule(got.ce, low.ce, ref.ce, floor, what + " CE");
  expect_within_rule(got.d_hidden, low.d_hidden, ref.d_hidden, floor, what + " d hidden");
  expect_within_rule(got.d_weight, low.d_weight, ref.d_weight, floor, what + " d weight");
  expect_within_rule(got.d_bias, low.d_bias, ref.d_bias, floor, what + " d bias");
}

TEST(LmHeadLoss, MatchesUnfusedCrossEntropyAndGradients) {
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    for (int64_t chunk : {0, 1, 5, 64}) {
      check(make_problem(37, 24, 101, false, false, 1), dtype, chunk, "plain mean");
      check(make_problem(37, 24, 101, true, true, 2), dtype, chunk, "bias, token weights");
    }
    check(make_problem(300, 40, 1031, false, true, 3), dtype, 97, "N = 300, V = 1031");
  }
}

TEST(LmHeadLoss, TiedEmbeddingsGetBothGradients) {
  // The head's weight is also the embedding table the hidden states come from: its gradient is the
  // sum of both uses, as autograd gives the unfused computation.
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    const Problem p = make_problem(29, 16, 83, false, true, 4);
    const torch::Tensor ids = torch::randint(0, 83, {29}, torch::kLong);
    auto run = [&](torch::ScalarType dt, bool use_fused) {
      const torch::Tensor w = leaf(p.weight, dt), h0 = leaf(p.hidden, dt);
      const torch::Tensor h = torch::embedding(w, ids) * 0.7 + h0;
      torch::Tensor loss;
      if (use_fused) {
        loss = lm_head_cross_entropy(h, w, {}, p.targets, p.token_weights, 7).loss;
      } else {
        namespace F = torch::nn::functional;
        const torch::Tensor ce = F::cross_entropy(
            F::linear(h, w).to(dt == torch::kDouble ? torch::kDouble : torch::kFloat), p.targets,
            F::CrossEntropyFuncOptions().reduction(torch::kNone).ignore_index(kLmIgnoreIndex));
        const torch::Tensor wt =
            p.targets.ne(kLmIgnoreIndex).to(ce.scalar_type()) * p.token_weights.to(ce.scalar_type());
        loss = (ce * wt).sum() / wt.sum();
      }
      loss.backward();
      return std::make_pair(w.grad().to(torch::kDouble), h0.grad().to(torch::kDouble));
    };
    const auto ref = run(torch::kDouble, false), low = run(dtype, false), got = run(dtype, true);
    const double floor = dtype == torch::kFloat ? 1e-6 : std::ldexp(1.0, -12);
    expect_within_rule(got.first, low.first, ref.first, floor, "tied weight");
    expect_within_rule(got.second, low.second, ref.second, floor, "hidden");
  }
}

TEST(LmHeadLoss, WithoutGradientsGivesTheSameLoss) {
  const Problem p = make_problem(41, 24, 101, true, true, 5);
  const torch::Tensor h = leaf(p.hidden, torch::kFloat), w = leaf(p.weight, torch::kFloat);
  const torch::Tensor b = leaf(p.bias, torch::kFloat);
  const LmHeadLoss with = lm_head_cross_entropy(h, w, b, p.targets, p.token_weights, 6);
  torch::NoGradGuard no_grad;
  const LmHeadLoss without = lm_head_cross_entropy(h, w, b, p.targets, p.token_weights, 6);
  EXPECT_FALSE(without.loss.requires_grad());
  EXPECT_TRUE(torch::equal(with.loss.detach(), without.loss));
  EXPECT_TRUE(torch::equal(with.token_ce, without.token_ce));
  // Ignored positions count 0 in CE; no counted position at all gives NaN, as torch's mean.
  EXPECT_TRUE(torch::equal(without.token_ce.masked_select(p.targets.eq(kLmIgnoreIndex)),
                           torch::zeros({p.targets.eq(kLmIgnoreIndex).sum().item<int64_t>()})));
  const torch::Tensor none = torch::full({41}, kLmIgnoreIndex, torch::kLong);
  EXPECT_TRUE(std::isnan(lm_head_cross_entropy(h, w, b, none).loss.item<double>()));
}

TEST(LmHeadLoss, RefusesBadArgumentsNamingThem) {
  const torch::Tensor h = torch::randn({5, 8}), w = torch::randn({11, 8});
  const torch::Tensor t = torch::randint(0, 11, {5}, torch::kLong);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { lm_head_cross_entropy(h, w, {}, t.to(torch::kInt)); }).find("targets"), std::string::npos);
  EXPECT_NE(message([&] { lm_head_cross_entropy(h, torch::randn({11, 9}), {}, t); }).find("weight"),
            std::string::npos);
  EXPECT_NE(message([&] { lm_head_cross_entropy(h, w, {}, t, torch::ones({4})); }).find("token_weights"),
            std::string::npos);
}

TEST(LmHeadLoss, ModelHeadTiedOrNotEqualsItsLogits) {
  for (bool tied : {false, true}) {
    ModelConfig c = tiny_config();
    c.tie_word_embeddings = tied;
    const LlamaWeights weights = llama_weights_random(c, torch::kFloat, torch::kCPU, 9);
    const torch::Tensor hidden = torch::randn({2, 5, c.hidden_size});
    const torch::Tensor targets = torch::randint(0, c.vocab_size, {2, 5}, torch::kLong);
    const LmHeadLoss got = lm_head_loss(weights, {}, hidden, targets);
    const torch::Tensor logits = weights_linear(weights, {}, "lm_head", hidden).reshape({-1, c.vocab_size});
    const torch::Tensor want = torch::nn::functional::cross_entropy(logits, targets.reshape({-1}));
    EXPECT_NEAR(got.loss.item<double>(), want.item<double>(), 1e-5 * (1 + std::fabs(want.item<double>())))
        << (tied ? "tied" : "untied");
  }
  Overrides lora;
  lora.lora["lm_head"] = LoraAdapter{};
  const LlamaWeights weights = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 9);
  EXPECT_THROW(lm_head_loss(weights, lora, torch::randn({1, 3, 48}), torch::zeros({1, 3}, torch::kLong)),
               std::invalid_argument);
}

}  // namespace

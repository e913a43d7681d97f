// linear_recast against torch's linear on the same cast: outputs and every gradient bit for bit
// (bf16 and fp32, odd sizes, 1-D to 3-D inputs, with and without bias, inputs with and without
// gradient, an input made again from its RMSNorm), neither the cast nor a normed input kept by the
// graph, a source changed before backward caught, bad sources refused naming both shapes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "linear_ard/model/linear_recast.h"
#include "linear_ard/model/rms_norm.h"  // defines: rms_norm

namespace {

using linear_ard::model::linear_recast;

struct Leaves {
  torch::Tensor x, master, bias;  // x and bias in the compute dtype, the master in fp32
};

Leaves leaves_make(const std::vector<int64_t>& x_sizes, torch::ScalarType dtype, bool bias, bool x_grad) {
  Leaves l;
  l.x = torch::randn(x_sizes).to(dtype).set_requires_grad(x_grad);
  l.master = torch::randn({11, x_sizes.back()}).set_requires_grad(true);
  if (bias) l.bias = torch::randn({11}).to(dtype).set_requires_grad(true);
  return l;
}

// The output and the gradients of x, master and bias after backward of sum(y * g).
std::vector<torch::Tensor> run(const Leaves& l, torch::ScalarType dtype, bool recast, const torch::Tensor& g) {
  const torch::Tensor weight = l.master.to(dtype, /*non_blocking=*/false, /*copy=*/true);
  const torch::Tensor y = recast ? linear_recast(l.x, weight, l.master.detach(), l.bias)
                                 : torch::nn::functional::linear(l.x, weight, l.bias);
  (y.to(torch::kFloat) * g).sum().backward();
  std::vector<torch::Tensor> out{y.detach(), l.master.grad()};
  if (l.x.requires_grad()) out.push_back(l.x.grad());
  if (l.bias.defined()) out.push_back(l.bias.grad());
  return out;
}

TEST(LinearRecast, SameOutputAndGradientsAsTorchLinearBitForBit) {
  for (const auto dtype : {torch::kBFloat16, torch::kFloat})
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{2, 5, 7}, {9, 13}, {13}})
      for (const bool bias : {false, true})
        for (const bool x_grad : {false, true}) {
          torch::manual_seed(static_cast<uint64_t>(sizes.size() * 8 + bias * 2 + x_grad));
          const Leaves a = leaves_make(sizes, dtype, bias, x_grad);
          Leaves b{a.x.detach().clone().set_requires_grad(x_grad), a.master.detach().clone().set_requires_grad(true),
                   bias ? a.bias.detach().clone().set_requires_grad(true) : torch::Tensor()};
          std::vector<int64_t> y_sizes = sizes;
          y_sizes.back() = 11;
          const torch::Tensor g = torch::randn(y_sizes);
          const auto want = run(a, dtype, false, g), got = run(b, dtype, true, g);
          ASSERT_EQ(got.size(), want.size());
          for (size_t i = 0; i < want.size(); ++i)
            EXPECT_TRUE(torch::equal(got[i], want[i]))
                << "output/gradient " << i << " of x " << sizes << " " << dtype << (bias ? " bias" : "")
                << (x_grad ? " x grad" : "") << ": max difference "
                << (got[i].to(torch::kFloat) - want[i].to(torch::kFloat)).abs().max().item<float>();
        }
}

// x as an RMSNorm of h: with x_from, the same output and gradients (h's and the norm weight's through
// the norm, the master's) bit for bit, and the graph keeps neither x nor the cast.
TEST(LinearRecast, AnInputMadeAgainFromItsNormIsTheSameAndNotKept) {
  for (const auto dtype : {torch::kBFloat16, torch::kFloat}) {
    torch::manual_seed(21);
    const torch::Tensor h0 = torch::randn({3, 5, 9}).to(dtype), nw0 = torch::rand({9}).add(0.5).to(dtype);
    const torch::Tensor m0 = torch::randn({7, 9}), g = torch::randn({3, 5, 7});
    std::vector<std::vector<torch::Tensor>> results;
    for (const bool recast : {false, true}) {
      const torch::Tensor h = h0.clone().set_requires_grad(true), nw = nw0.clone().set_requires_grad(true);
      const torch::Tensor m = m0.clone().set_requires_grad(true);
      std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> x_kept, w_kept;
      torch::Tensor y;
      {
        const linear_ard::model::NormedInput from{h, nw, 1e-5};
        const torch::Tensor x = linear_ard::model::rms_norm(h, nw, 1e-5), w = m.to(dtype, false, /*copy=*/true);
        x_kept = x.storage().getWeakStorageImpl();
        w_kept = w.storage().getWeakStorageImpl();
        y = recast ? linear_recast(x, w, m.detach(), {}, &from) : torch::nn::functional::linear(x, w);
      }
      EXPECT_EQ(x_kept->expired(), recast) << dtype;
      EXPECT_EQ(w_kept->expired(), recast) << dtype;
      (y.to(torch::kFloat) * g).sum().backward();
      results.push_back({y.detach(), h.grad(), nw.grad(), m.grad()});
    }
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(torch::equal(results[1][i], results[0][i])) << "output/gradient " << i << " " << dtype;
  }
}

TEST(LinearRecast, TheGraphKeepsTheSourceNotTheCast) {
  const Leaves l = leaves_make({3, 4, 6}, torch::kBFloat16, true, true);
  for (const bool recast : {false, true}) {
    std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> cast;
    torch::Tensor y;
    {
      const torch::Tensor weight = l.master.to(torch::kBFloat16);
      cast = weight.storage().getWeakStorageImpl();
      y = recast ? linear_recast(l.x, weight, l.master.detach(), l.bias)
                 : torch::nn::functional::linear(l.x, weight, l.bias);
    }
    EXPECT_EQ(cast->expired(), recast) << (recast ? "linear_recast" : "torch's linear (the control)");
    y.sum().backward();
    EXPECT_TRUE(l.master.grad().defined());
    l.master.mutable_grad().reset();
    l.x.mutable_grad().reset();
  }
}

TEST(LinearRecast, ASourceChangedBeforeBackwardIsCaught) {
  const Leaves l = leaves_make({4, 6}, torch::kBFloat16, false, true);
  const torch::Tensor source = l.master.detach();
  const torch::Tensor y = linear_recast(l.x, l.master.to(torch::kBFloat16), source);
  source.add_(1.0);  // what an optimizer step before backward would do
  EXPECT_THROW(y.sum().backward(), c10::Error);
}

TEST(LinearRecast, ASourceThatIsNotTheWeightsIsRefused) {
  const Leaves l = leaves_make({4, 6}, torch::kBFloat16, false, true);
  const torch::Tensor weight = l.master.to(torch::kBFloat16);
  try {
    linear_recast(l.x, weight, torch::zeros({6, 11}));
    FAIL() << "a source of another shape was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[11, 6]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[6, 11]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(linear_recast(l.x, weight, l.master), std::invalid_argument);  // a source requiring grad
  const linear_ard::model::NormedInput other{torch::randn({5, 6}), torch::ones({6}), 1e-5};
  EXPECT_THROW(linear_recast(l.x, weight, l.master.detach(), {}, &other), std::invalid_argument);  // not x's norm
  torch::NoGradGuard no_grad;  // no graph: torch's linear, whatever the source
  EXPECT_TRUE(torch::equal(linear_recast(l.x, weight, torch::zeros({6, 11})),
                           torch::nn::functional::linear(l.x, weight)));
}

}  // namespace

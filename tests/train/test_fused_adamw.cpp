// FusedAdamW (at::_fused_adamw_) against libtorch's own AdamW, an independent implementation of the
// same update: fresh random fp32 parameters of odd shapes and random gradients, the learning rate
// changed every step as the trainer's schedule does, weight decay on. The two must agree to fp32
// rounding after every step; an archive saved by either loads in the other and the runs go on
// together (the fused kernel's step counters are rebuilt from the loaded integers).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <string>
#include <vector>

#include "linear_ard/train/fused_adamw.h"  // defines: FusedAdamW

namespace {

using linear_ard::train::FusedAdamW;

std::vector<torch::Tensor> params_make(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> params;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{7, 5}, {13}, {3, 1, 9}})
    params.push_back(torch::randn(shape, torch::kFloat).requires_grad_(true));
  return params;
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

torch::optim::AdamWOptions options() { return torch::optim::AdamWOptions(1e-2).weight_decay(0.1).betas({0.9, 0.95}); }

// The same random gradients on both sets (scaled per step so the moments see varied magnitudes),
// the step's learning rate set on every group, then one update of each optimizer.
void step_both(torch::optim::Optimizer& a, std::vector<torch::Tensor>& pa, torch::optim::Optimizer& b,
               std::vector<torch::Tensor>& pb, int step) {
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto g = torch::randn_like(pa[i]) * (0.1 + step);
    pa[i].mutable_grad() = g.clone();
    pb[i].mutable_grad() = g.clone();
  }
  for (auto* opt : {&a, &b})
    for (auto& group : opt->param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(1e-2 / (1 + step));
  a.step();
  b.step();
}

void expect_close(const std::vector<torch::Tensor>& pa, const std::vector<torch::Tensor>& pb, int step) {
  for (size_t i = 0; i < pa.size(); ++i) {
    // fp32: the two order their arithmetic differently; a few ulps of values of order 1.
    const double diff = (pa[i] - pb[i]).abs().max().item<double>();
    EXPECT_LT(diff, 2e-6) << "parameter " << i << " after step " << step;
  }
}

TEST(FusedAdamW, MatchesLibtorchAdamW) {
  auto pf = params_make(3), pl = clones(pf);
  FusedAdamW fused(pf, options());
  torch::optim::AdamW plain(pl, options());
  for (int s = 0; s < 8; ++s) {
    step_both(fused, pf, plain, pl, s);
    expect_close(pf, pl, s);
  }
  // The update moved the parameters: the comparison is not between two untouched copies.
  EXPECT_GT((pf[0] - params_make(3)[0]).abs().max().item<double>(), 1e-3);
}

TEST(FusedAdamW, ArchivesLoadInEitherDirection) {
  for (bool fused_first : {true, false}) {
    auto p1 = params_make(5), p2 = clones(p1);
    std::unique_ptr<torch::optim::Optimizer> first =
        fused_first ? std::unique_ptr<torch::optim::Optimizer>(std::make_unique<FusedAdamW>(p1, options()))
                    : std::make_unique<torch::optim::AdamW>(p1, options());
    std::unique_ptr<torch::optim::Optimizer> reference = std::make_unique<torch::optim::AdamW>(p2, options());
    for (int s = 0; s < 3; ++s) step_both(*first, p1, *reference, p2, s);
    std::stringstream buffer;
    torch::serialize::OutputArchive out;
    first->save(out);
    out.save_to(buffer);
    // The other implementation on a copy of the parameters, continuing from the archive.
    auto p3 = clones(p1);
    std::unique_ptr<torch::optim::Optimizer> second =
        fused_first ? std::make_unique<torch::optim::AdamW>(p3, options())
                    : std::unique_ptr<torch::optim::Optimizer>(std::make_unique<FusedAdamW>(p3, options()));
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    second->load(in);
    for (int s = 3; s < 7; ++s) {
      step_both(*second, p3, *reference, p2, s);
      expect_close(p3, p2, s);
    }
  }
}

TEST(FusedAdamW, SkipsParametersWithoutGradientsAndRefusesAmsgrad) {
  auto params = params_make(7);
  FusedAdamW opt(params, options());
  params[0].mutable_grad() = torch::ones_like(params[0]);
  const auto before = params[1].detach().clone();
  opt.step();
  EXPECT_TRUE(torch::equal(params[1], before));
  EXPECT_EQ(opt.state().size(), 1u);
  FusedAdamW ams(params, torch::optim::AdamWOptions(1e-3).amsgrad(true));
  EXPECT_THROW(ams.step(), std::invalid_argument);
}

// step_held on the CPU (the cast-up path; the CUDA kernel has its GPU check, fused_adamw_check):
// bf16 gradients given with a clipping factor make the update step() makes from those gradients
// cast to fp32 and scaled, bit for bit, interleaved with plain steps (the step counters stay one
// count); a parameter left out keeps its state; bad input is refused naming the parameter.
TEST(FusedAdamW, StepHeldMakesTheCastUpUpdate) {
  auto ph = params_make(9), pc = clones(ph);
  FusedAdamW held(ph, options()), cast(pc, options());
  for (int s = 0; s < 5; ++s) {
    const double coef = s % 2 ? 0.3 : 1.0;
    std::vector<FusedAdamW::HeldGrad> given;
    for (size_t i = 0; i < ph.size(); ++i) {
      if (s == 3 && i == 1) {
        pc[i].mutable_grad().reset();
        continue;
      }
      const auto g = (torch::randn_like(ph[i]) * (0.1 + s)).to(torch::kBFloat16).reshape(-1);
      auto g32 = g.to(torch::kFloat).view(pc[i].sizes());
      if (coef < 1.0) g32.mul_(coef);
      pc[i].mutable_grad() = g32;
      if (s == 2) {
        ph[i].mutable_grad() = g32.clone();  // a plain step between held ones
      } else {
        given.push_back({ph[i], g});
      }
    }
    if (s == 2) {
      held.step();
      for (auto& p : ph) p.mutable_grad().reset();
    } else {
      held.step_held(given, coef);
    }
    cast.step();
    for (size_t i = 0; i < ph.size(); ++i) {
      EXPECT_TRUE(torch::equal(ph[i], pc[i])) << "parameter " << i << " after step " << s;
      EXPECT_FALSE(ph[i].grad().defined() && s != 2);
      const auto& sh = static_cast<torch::optim::AdamWParamState&>(*held.state().at(ph[i].unsafeGetTensorImpl()));
      const auto& sc = static_cast<torch::optim::AdamWParamState&>(*cast.state().at(pc[i].unsafeGetTensorImpl()));
      EXPECT_EQ(sh.step(), sc.step());
      EXPECT_TRUE(torch::equal(sh.exp_avg_sq(), sc.exp_avg_sq())) << i;
    }
  }
  EXPECT_GT((ph[0] - params_make(9)[0]).abs().max().item<double>(), 1e-3);
  const auto stranger = torch::zeros({3}, torch::kFloat).requires_grad_(true);
  EXPECT_THROW(held.step_held({{stranger, torch::zeros({3}, torch::kBFloat16)}}, 1.0), std::invalid_argument);
  try {
    held.step_held({{ph[0], torch::zeros({ph[0].numel() + 1}, torch::kBFloat16)}}, 1.0);
    ADD_FAILURE() << "a gradient of another numel was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 0 has 35 elements, its gradient 36"), std::string::npos) << e.what();
  }
}

}  // namespace

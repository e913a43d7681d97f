// GPU check of FusedAdamW::step_held's kernel (src/train/cuda/adamw_held.cu) against the path it
// replaces: each model-dtype gradient cast to fp32, multiplied by the clipping factor, set as the
// parameter's gradient, then torch's _fused_adamw_ (FusedAdamW::step). Run by dev/gpu/gpu_check.sh;
// on a machine without CUDA it says so and exits 0. Parameters, moments and step counts must be
// equal bit for bit after every step of a few: bf16 and fp16 gradients, with and without clipping and
// weight decay, the learning rate changed every step, sizes below and above a block's 4,096 elements
// and not multiples of 4, gradients that are unaligned views of a flat buffer (the scalar path),
// more tensors than one launch takes (48), and a parameter left out of a step (its state untouched).
// Prints one line per case and a last line with the verdict.
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/train/fused_adamw.h"

namespace {

using linear_ard::train::FusedAdamW;

struct Case {
  torch::ScalarType grad_dtype;
  double coef, weight_decay;
  bool unaligned;      // gradients as views at odd offsets of one flat buffer
  int tensors;         // how many parameters
};

std::vector<torch::Tensor> params_make(const Case& c) {
  torch::manual_seed(5);
  std::vector<torch::Tensor> out;
  const int64_t sizes[] = {1, 3, 4095, 4096, 4097, 9000, 70001};
  for (int i = 0; i < c.tensors; ++i)
    out.push_back(torch::randn({sizes[i % 7] + i}, torch::kCUDA).requires_grad_(true));
  return out;
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// The model-dtype gradients of one step: views of one flat buffer, each at an offset of 8 elements'
// multiple (the kernel's vector path) or, when unaligned, at odd offsets (its scalar path).
std::vector<torch::Tensor> grads_make(const std::vector<torch::Tensor>& ps, const Case& c, int step) {
  const auto slot = [&](int64_t numel) { return c.unaligned ? numel + 1 : (numel + 7) / 8 * 8; };
  int64_t total = 1;
  for (const auto& p : ps) total += slot(p.numel());
  const auto flat = (torch::randn({total}, torch::kCUDA) * (0.01 + step)).to(c.grad_dtype);
  std::vector<torch::Tensor> out;
  int64_t offset = c.unaligned ? 1 : 0;
  for (const auto& p : ps) {
    out.push_back(flat.narrow(0, offset, p.numel()));
    offset += slot(p.numel());
  }
  return out;
}

bool same(const torch::Tensor& a, const torch::Tensor& b) { return torch::equal(a, b); }

bool run_case(const Case& c) {
  auto pk = params_make(c), pc = clones(pk);
  const auto options = torch::optim::AdamWOptions(3e-3).weight_decay(c.weight_decay).betas({0.9, 0.95});
  FusedAdamW kernel(pk, options), cast(pc, options);
  bool ok = true;
  for (int step = 0; step < 4; ++step) {
    const double lr = 3e-3 / (1 + step);
    for (auto* opt : {&kernel, &cast})
      for (auto& group : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    const auto grads = grads_make(pk, c, step);
    const size_t skip = step == 2 ? 1 : pk.size();  // step 2 leaves parameter 1 out
    std::vector<FusedAdamW::HeldGrad> given;
    for (size_t i = 0; i < pk.size(); ++i) {
      if (i == skip) {
        pc[i].mutable_grad().reset();
        continue;
      }
      given.push_back({pk[i], grads[i]});
      torch::Tensor g = grads[i].to(torch::kFloat);
      if (c.coef < 1.0) g.mul_(c.coef);
      pc[i].mutable_grad() = g;
    }
    kernel.step_held(given, c.coef);
    cast.step();
    for (size_t i = 0; i < pk.size(); ++i) {
      const auto& sk = static_cast<torch::optim::AdamWParamState&>(*kernel.state().at(pk[i].unsafeGetTensorImpl()));
      const auto& sc = static_cast<torch::optim::AdamWParamState&>(*cast.state().at(pc[i].unsafeGetTensorImpl()));
      const bool equal = same(pk[i], pc[i]) && same(sk.exp_avg(), sc.exp_avg()) &&
                         same(sk.exp_avg_sq(), sc.exp_avg_sq()) && sk.step() == sc.step();
      if (!equal) {
        std::printf("  step %d parameter %zu (%lld elements): max |diff| %.3g\n", step, i,
                    static_cast<long long>(pk[i].numel()), (pk[i] - pc[i]).abs().max().item<double>());
        ok = false;
      }
    }
  }
  return ok;
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) {
    std::printf("fused_adamw_check: no CUDA device, nothing checked\n");
    return 0;
  }
  int failed = 0, total = 0;
  for (const auto dt : {torch::kBFloat16, torch::kHalf})
    for (const double coef : {1.0, 0.37})
      for (const double wd : {0.0, 0.1})
        for (const bool unaligned : {false, true})
          for (const int tensors : {3, 50}) {
            const Case c{dt, coef, wd, unaligned, tensors};
            const bool ok = run_case(c);
            ++total;
            failed += ok ? 0 : 1;
            std::printf("%s step_held %s coef %.2f weight decay %.1f %s, %d tensors\n", ok ? "ok  " : "FAIL",
                        dt == torch::kBFloat16 ? "bf16" : "fp16", coef, wd, unaligned ? "unaligned" : "aligned",
                        tensors);
          }
  std::printf("fused_adamw_check: %d of %d cases equal bit for bit%s\n", total - failed, total,
              failed ? " (FAILED)" : "");
  return failed ? 1 : 0;
}

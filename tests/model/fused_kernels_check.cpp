// GPU check of the model layer's fused CUDA kernels against the composite torch ops they replace
// (run by dev/gpu/gpu_check.sh; on a machine without CUDA it says so and exits 0):
// - q/k/v split + RoPE (rope_qkv_fused): forward and gradient bit for bit equal to the composite
//   (split, rope_apply, autograd), fp32 / bf16 / fp16, full and partial rotary dims, GQA and MHA,
//   cos shared across the batch or per row, odd lengths;
// - SwiGLU (swiglu_fused): forward and the up half of the gradient bit for bit; the gate half
//   within FlashAttention's rule, error against fp64 at most twice the composite's (the fused
//   expression may contract differently into FMAs);
// - residual add + RMSNorm (add_rms_norm_fused): h, y and the gradients of x, r and the weight,
//   each within FlashAttention's rule against fp64 beside x + r then at::rms_norm; fp32 / bf16 /
//   fp16, odd widths (the one-element path) and odd row counts, more rows than backward's blocks;
// - the chunked LM head + cross-entropy (lm_head_cross_entropy, its CUDA fp32-output dW GEMM):
//   loss and the gradients of the hidden states and the weight within FlashAttention's rule
//   against fp64 beside the materialised logits' cross_entropy; SmolLM2's vocabulary and width,
//   several chunks, ignored targets, token weights.
// Prints one line per case and a last line with the verdict.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/fused_add_rms_norm.h"
#include "linear_ard/model/fused_rope_qkv.h"
#include "linear_ard/model/fused_swiglu.h"
#include "linear_ard/model/lm_head_loss.h"

namespace {

using linear_ard::model::RopeCosSin;

struct Counter {
  int failed = 0, total = 0;
  void report(bool ok, const std::string& what) {
    ++total;
    if (!ok) ++failed;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  }
};

RopeCosSin random_cos_sin(int64_t batch, int64_t n, int64_t rot, torch::ScalarType dt) {
  auto angles = torch::rand({batch, n, rot / 2}, torch::kCUDA) * 40.0;
  auto emb = torch::cat({angles, angles}, -1);
  auto sin = emb.sin().to(dt);
  return {emb.cos().to(dt), torch::cat({-sin.narrow(-1, 0, rot / 2), sin.narrow(-1, rot / 2, rot / 2)}, -1)};
}

// The composite path of attention_qkv (split, rope_apply over the q and k heads), for comparison.
std::vector<torch::Tensor> rope_composite(const torch::Tensor& qkv, const RopeCosSin& cs, int64_t h, int64_t hkv,
                                          int64_t d) {
  auto heads = qkv.view({qkv.size(0), qkv.size(1), -1, d}).transpose(1, 2);
  auto qk_v = heads.split_with_sizes({h + hkv, hkv}, 1);
  auto q_k = linear_ard::model::rope_apply(qk_v[0], cs).split_with_sizes({h, hkv}, 1);
  return {q_k[0], q_k[1], qk_v[1]};
}

void check_rope(Counter& c, torch::ScalarType dt, int64_t h, int64_t hkv, int64_t d, int64_t rot, int64_t cos_batch) {
  const int64_t b = 2, n = 37;
  auto base = torch::randn({b, n, (h + 2 * hkv) * d}, torch::kCUDA).to(dt);
  const RopeCosSin cs = random_cos_sin(cos_batch, n, rot, dt);
  std::vector<torch::Tensor> upstream;
  for (int64_t heads : {h, hkv, hkv}) upstream.push_back(torch::randn({b, heads, n, d}, torch::kCUDA).to(dt));
  std::vector<torch::Tensor> outs[2], grads(2);
  for (int fused = 0; fused < 2; ++fused) {
    auto x = base.clone().requires_grad_(true);
    if (fused) {
      auto [q, k, v] = linear_ard::model::rope_qkv_fused(x, cs, h, hkv, d);
      outs[1] = {q, k, v};
    } else {
      outs[0] = rope_composite(x, cs, h, hkv, d);
    }
    torch::autograd::backward(outs[fused], upstream);
    grads[fused] = x.grad();
  }
  bool equal = true;
  for (int i = 0; i < 3; ++i) equal = equal && torch::equal(outs[0][i], outs[1][i]);
  const bool grad_equal = torch::equal(grads[0], grads[1]);
  c.report(equal && grad_equal, "rope_qkv " + std::string(c10::toString(dt)) + " H=" + std::to_string(h) +
                                    " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) + " rot=" +
                                    std::to_string(rot) + " cos batch " + std::to_string(cos_batch) +
                                    ": forward " + (equal ? "bitwise" : "DIFFERS") + ", gradient " +
                                    (grad_equal ? "bitwise" : "DIFFERS"));
}

double max_error(const torch::Tensor& x, const torch::Tensor& ref) {
  return (x.to(torch::kDouble) - ref).abs().max().item<double>();
}

void check_swiglu(Counter& c, torch::ScalarType dt, int64_t f) {
  auto base = (torch::randn({3, 29, 2 * f}, torch::kCUDA) * 3).to(dt);
  auto dh = torch::randn({3, 29, f}, torch::kCUDA).to(dt);
  torch::Tensor out[2], grad[2];
  for (int fused = 0; fused < 2; ++fused) {
    auto x = base.clone().requires_grad_(true);
    auto parts = x.split_with_sizes({f, f}, -1);
    out[fused] = fused ? linear_ard::model::swiglu_fused(x) : torch::silu(parts[0]) * parts[1];
    out[fused].backward(dh);
    grad[fused] = x.grad();
  }
  // fp64 reference of the gate gradient from the same (rounded) inputs and upstream.
  auto g = base.narrow(-1, 0, f).to(torch::kDouble), u = base.narrow(-1, f, f).to(torch::kDouble);
  auto sig = torch::sigmoid(g);
  auto ref_dgate = dh.to(torch::kDouble) * u * sig * (1 + g * (1 - sig));
  const double err_fused = max_error(grad[1].narrow(-1, 0, f), ref_dgate);
  const double err_composite = max_error(grad[0].narrow(-1, 0, f), ref_dgate);
  const bool fwd = torch::equal(out[0], out[1]);
  const bool dup = torch::equal(grad[0].narrow(-1, f, f), grad[1].narrow(-1, f, f));
  const bool dgate = err_fused <= 2 * err_composite + 1e-12;
  char line[256];
  std::snprintf(line, sizeof line, "swiglu %s f=%lld: forward %s, d_up %s, d_gate max err vs fp64 %.3g (composite %.3g)",
                c10::toString(dt), static_cast<long long>(f), fwd ? "bitwise" : "DIFFERS", dup ? "bitwise" : "DIFFERS",
                err_fused, err_composite);
  c.report(fwd && dup && dgate, line);
}

// FlashAttention's rule for one tensor: error against fp64 at most twice the composite's, plus a
// floor of 2^-20 of the reference's scale (fp32 cases, where both errors are a few units in the
// last place).
bool within_rule(const torch::Tensor& fused, const torch::Tensor& composite, const torch::Tensor& ref, std::string& text) {
  const double err_fused = max_error(fused, ref), err_composite = max_error(composite, ref);
  const double floor = std::ldexp(std::max(1.0, ref.abs().max().item<double>()), -20);
  char part[96];
  std::snprintf(part, sizeof part, " %.3g (composite %.3g)", err_fused, err_composite);
  text += part;
  return err_fused <= 2 * err_composite + floor;
}

// add_rms_norm_fused against x + r then at::rms_norm (the model's composite path): h, y and the
// gradients of x, r and (when `weight_grad`: the kernel skips it otherwise) the weight, each against
// an fp64 autograd reference on the same rounded inputs.
void check_add_rms_norm(Counter& c, torch::ScalarType dt, int64_t rows, int64_t width, bool weight_grad = true) {
  const double eps = 1e-5;
  std::vector<torch::Tensor> in{torch::randn({rows, width}, torch::kCUDA), torch::randn({rows, width}, torch::kCUDA),
                                1 + 0.1 * torch::randn({width}, torch::kCUDA)};
  for (auto& t : in) t = t.to(dt);
  const std::vector<torch::Tensor> up{torch::randn({rows, width}, torch::kCUDA).to(dt),
                                      torch::randn({rows, width}, torch::kCUDA).to(dt)};
  std::vector<torch::Tensor> outs[3], grads[3];  // composite, fused, fp64 reference
  for (int k = 0; k < 3; ++k) {
    std::vector<torch::Tensor> v;
    for (const auto& t : in) v.push_back((k == 2 ? t.to(torch::kDouble) : t.clone()).requires_grad_(true));
    v[2].requires_grad_(weight_grad);
    if (k == 1) {
      auto [h, y] = linear_ard::model::add_rms_norm_fused(v[0], v[1], v[2], eps);
      outs[k] = {h, y};
    } else {
      auto h = v[0] + v[1];
      outs[k] = {h, k == 0 ? at::rms_norm(h, {width}, v[2], eps) : h * torch::rsqrt(h.pow(2).mean(-1, true) + eps) * v[2]};
    }
    torch::autograd::backward(outs[k], {k == 2 ? up[0].to(torch::kDouble) : up[0], k == 2 ? up[1].to(torch::kDouble) : up[1]});
    grads[k] = {v[0].grad(), v[1].grad(), v[2].grad()};
  }
  std::string text = "add_rms_norm " + std::string(c10::toString(dt)) + " rows=" + std::to_string(rows) +
                     " width=" + std::to_string(width) + (weight_grad ? "" : " (frozen weight)") +
                     ": max err vs fp64 of h, y, dx, dr" + (weight_grad ? ", dw:" : ":");
  bool ok = true;
  for (int i = 0; i < 2; ++i) ok = within_rule(outs[1][i], outs[0][i], outs[2][i], text) && ok;
  for (int i = 0; i < (weight_grad ? 3 : 2); ++i) ok = within_rule(grads[1][i], grads[0][i], grads[2][i], text) && ok;
  c.report(ok, text);
}

// lm_head_cross_entropy against linear + .float() + cross_entropy (the trainer's former loss) and
// an fp64 reference, on the same rounded inputs: loss, d hidden, d weight.
void check_lm_head_loss(Counter& c, torch::ScalarType dt, int64_t n, int64_t width, int64_t vocab, int64_t chunk) {
  using linear_ard::model::kLmIgnoreIndex;
  const torch::Tensor hidden = torch::randn({n, width}, torch::kCUDA).to(dt);
  const torch::Tensor weight = (0.05 * torch::randn({vocab, width}, torch::kCUDA)).to(dt);
  torch::Tensor targets = torch::randint(0, vocab, {n}, torch::TensorOptions(torch::kLong).device(torch::kCUDA));
  targets.masked_fill_(torch::rand({n}, torch::kCUDA) < 0.1, kLmIgnoreIndex);
  const torch::Tensor tw = torch::rand({n}, torch::kCUDA);
  std::vector<torch::Tensor> res[3];  // composite, fused, fp64 reference: loss, d hidden, d weight
  for (int k = 0; k < 3; ++k) {
    const torch::ScalarType t = k == 2 ? torch::kDouble : dt;
    const torch::Tensor h = hidden.to(t).detach().requires_grad_(), w = weight.to(t).detach().requires_grad_();
    torch::Tensor loss;
    if (k == 1) {
      loss = linear_ard::model::lm_head_cross_entropy(h, w, {}, targets, tw, chunk).loss;
    } else {
      namespace F = torch::nn::functional;
      const torch::Tensor logits = F::linear(h, w).to(k == 2 ? torch::kDouble : torch::kFloat);
      const torch::Tensor ce = F::cross_entropy(
          logits, targets, F::CrossEntropyFuncOptions().reduction(torch::kNone).ignore_index(kLmIgnoreIndex));
      const torch::Tensor cw = targets.ne(kLmIgnoreIndex).to(ce.scalar_type()) * tw.to(ce.scalar_type());
      loss = (ce * cw).sum() / cw.sum();
    }
    loss.backward();
    res[k] = {loss.detach(), h.grad(), w.grad()};
  }
  std::string text = "lm_head_cross_entropy " + std::string(c10::toString(dt)) + " n=" + std::to_string(n) +
                     " width=" + std::to_string(width) + " vocab=" + std::to_string(vocab) + " chunk=" +
                     std::to_string(chunk) + ": max err vs fp64 of loss, d hidden, d weight:";
  bool ok = true;
  for (int i = 0; i < 3; ++i) ok = within_rule(res[1][i], res[0][i], res[2][i], text) && ok;
  c.report(ok, text);
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) {
    std::printf("fused_kernels_check: no CUDA device here; nothing checked\n");
    return 0;
  }
  torch::manual_seed(0);
  Counter c;
  for (auto dt : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    check_rope(c, dt, 9, 3, 64, 64, 1);   // SmolLM2's attention shape
    check_rope(c, dt, 9, 3, 64, 64, 2);   // per-row positions
    check_rope(c, dt, 4, 4, 96, 48, 1);   // MHA, partial rotary dim
    check_rope(c, dt, 8, 2, 128, 128, 2);
    check_rope(c, dt, 3, 1, 40, 20, 2);   // half rotary dim 10: the one-feature-per-thread path
    check_swiglu(c, dt, 1536);
    check_swiglu(c, dt, 77);
    check_add_rms_norm(c, dt, 2 * 37, 576);   // SmolLM2's width, odd rows: 16-byte path
    check_add_rms_norm(c, dt, 53, 4096);      // LLaMA-2 7B's width: several chunks per thread
    check_add_rms_norm(c, dt, 29, 77);        // odd width: the one-element path
    check_add_rms_norm(c, dt, 2000, 100);     // more rows than backward's blocks on most cards
    check_add_rms_norm(c, dt, 2 * 37, 576, /*weight_grad=*/false);  // the model's frozen norms
    check_lm_head_loss(c, dt, 1000, 576, 49152, 300);  // SmolLM2's head, four chunks
    check_lm_head_loss(c, dt, 77, 64, 1031, 0);         // one automatic chunk
  }
  if (!linear_ard::model::rope_qkv_fused_supported(torch::zeros({1, 3, 64}, torch::kCUDA),
                                                   random_cos_sin(1, 3, 64, torch::kFloat)))
    c.report(false, "rope_qkv_fused_supported is false on a CUDA fp32 case (LINEAR_ARD_NO_FUSED_KERNELS set?)");
  std::printf("fused_kernels_check: %d of %d cases %s\n", c.total - c.failed, c.total, c.failed ? "passed, FAILED" : "passed");
  return c.failed ? 1 : 0;
}

// relation_kl_ops: the relation-KL operator harness (after llama.cpp's test-backend-ops). One case
// table (linear_ard/core/relation_kl_cases.h) run on a backend, as a check against the dense fp64
// reference or as a benchmark:
//   relation_kl_ops --backend cpu|cuda --mode test [--quick] [--kernels default,mma,simt,default-det,mma-det]
//     the reference cases (every path the kernels list names; "mma" where the device's default
//     forward/backward is not mma.sync already: on sm_90a with D <= 128 "default" runs the wgmma
//     kernels; "-det": the deterministic backward), the non-finite rule (NaN/Inf inputs,
//     overflowing logits: NaN rows, never a finite KL), the exact zero gradient of rows that see a
//     single key (every path), the bitwise equality of two backward calls (the deterministic
//     backward on every path, and the CPU's) and (CUDA, without --quick) the run-to-run determinism
//     of the forward, with the default backward's run-to-run difference. --quick: four small
//     reference cases (for compute-sanitizer). Exits 1 on any failure; one line per case, a table
//     last.
//   relation_kl_ops --backend cpu|cuda --mode perf [--sizes 4096,8192] [--kernels default,default-det]
//     time and FLOP/s of forward, backward and both on the perf cases (CUDA: B=1, H=32, d=128,
//     causal bf16, n = 1K..16K, CUDA events, median; CPU: B=1, H=4, d=64, causal fp32, n = 512..4096,
//     best of 3, with the speed-up over the fp64 reference up to n = 1024).
// FLOPs per visible logit (causal: n (n + 1) / 2 per head): forward 4d (two logit GEMMs), backward
// 8d (both recomputed, dX and dY), together 12d, the paper's count.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_cases.h"      // defines: relation_kl_*_cases, relation_kl_describe
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference
#include "relation_kl_harness.h"                    // defines: Runner, run, reference_errors, time_ms

using namespace linear_ard;
using harness::Runner;

namespace {

int check_reference(const std::vector<Runner>& runners, bool quick, harness::Errors& worst) {
  int failures = 0;
  for (const RelationKLProblemSpec& spec : relation_kl_reference_cases(quick)) {
    RelationKLProblem prob(spec);
    const RelationKLReference ref = relation_kl_reference(prob.params(), true);
    for (const Runner& r : runners) {
      if (!harness::runner_takes(r, prob)) continue;
      harness::run(r, prob);
      const harness::Errors e = harness::reference_errors(prob, ref);
      const bool ok = e.within_tolerance(spec.dtype);
      failures += !ok;
      worst.kl = std::max(worst.kl, e.kl), worst.lse = std::max(worst.lse, e.lse);
      worst.dx = std::max(worst.dx, e.dx), worst.dy = std::max(worst.dy, e.dy);
      std::printf("%-4s %-13s %-86s kl %.2e lse %.2e dx %.2e dy %.2e\n", ok ? "ok" : "FAIL",
                  harness::backward_kernel(r, prob).c_str(), relation_kl_describe(spec).c_str(), e.kl, e.lse, e.dx,
                  e.dy);
    }
  }
  return failures;
}

// One non-finite case after a run: NaN exactly where the rule says, the finite rest as the reference.
bool nonfinite_ok(const RelationKLNonFiniteCase& c, RelationKLProblem& prob, std::string& report) {
  const int64_t d = prob.spec().dim_student;
  char buf[160];
  if (!c.nan_rows.empty()) {
    int missing = 0;
    for (int64_t o : c.nan_rows) {
      missing += !(std::isnan(prob.kl[o]) && std::isnan(prob.lse_student[o]) && std::isnan(prob.lse_teacher[o]));
      for (int64_t k = 0; k < d; ++k) missing += !std::isnan(prob.dx[o * d + k]);
    }
    std::snprintf(buf, sizeof(buf), "%zu rows must be NaN: %d misses", c.nan_rows.size(), missing);
    report = buf;
    return missing == 0;
  }
  const RelationKLReference ref = relation_kl_reference(prob.params(), true);
  const bool fp32 = prob.spec().dtype == DType::kF32 || prob.spec().dtype == DType::kF64;
  int row_misses = 0, nan_rows = 0;
  double worst_kl = 0, worst_lse = 0;
  for (size_t o = 0; o < ref.kl.size(); ++o) {
    const bool want_nan = std::isnan(ref.kl[o]);
    nan_rows += want_nan;
    if (want_nan || std::isnan(prob.kl[o])) {
      row_misses += !(want_nan && std::isnan(prob.kl[o]) && std::isnan(prob.lse_student[o]) &&
                      std::isnan(prob.lse_teacher[o]));
      continue;
    }
    const double lse = std::isinf(ref.lse_teacher[o]) ? 0.0 : std::fabs(ref.lse_teacher[o]);
    worst_kl = std::max(worst_kl, std::fabs(prob.kl[o] - ref.kl[o]) /
                                      (std::fabs(ref.kl[o]) + 1e-4 * (1.0 + lse + ref.logit_abs_max[o])));
    for (auto [got, want] : {std::pair<double, double>{prob.lse_student[o], ref.lse_student[o]},
                             {prob.lse_teacher[o], ref.lse_teacher[o]}}) {
      if (std::isinf(want)) {
        row_misses += got != want;
      } else {
        worst_lse = std::max(worst_lse, std::fabs(got - want) / (1.0 + std::fabs(want)));
      }
    }
  }
  // Gradients: NaN wherever the reference is (and only there unless it may spread); the elements
  // finite in both within the reference check's relative L2 tolerance.
  int grad_misses = 0;
  double worst_grad = 0;
  auto grads = [&](const OperatorBuffer& got, const std::vector<double>& want) {
    double num = 0, den = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      if (std::isnan(want[k]) || std::isnan(got[k])) {
        grad_misses += !(std::isnan(got[k]) && (std::isnan(want[k]) || c.grad_may_spread));
        continue;
      }
      num += (got[k] - want[k]) * (got[k] - want[k]);
      den += want[k] * want[k];
    }
    worst_grad = std::max(worst_grad, std::sqrt(num / std::max(den, 1e-30)));
  };
  grads(prob.dx, ref.dx);
  if (!ref.dy.empty()) grads(prob.dy, ref.dy);
  std::snprintf(buf, sizeof(buf), "NaN rows %d (misses %d), grad NaN misses %d; finite: kl %.1e lse %.1e grad %.1e",
                nan_rows, row_misses, grad_misses, worst_kl, worst_lse, worst_grad);
  report = buf;
  return row_misses == 0 && grad_misses == 0 && worst_kl <= (fp32 ? 1e-2 : 5e-2) && worst_lse <= 1e-4 &&
         worst_grad <= (fp32 ? 1e-3 : 1e-2);
}

int check_nonfinite(const std::vector<Runner>& runners) {
  int failures = 0;
  std::printf("\nnon-finite inputs: NaN rows exactly where the rule says, the finite rest as the reference\n");
  for (const RelationKLNonFiniteCase& c : relation_kl_nonfinite_cases()) {
    for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
      RelationKLProblemSpec spec = c.spec;
      spec.dtype = dt;
      RelationKLProblem prob(spec);
      c.plant(prob);
      for (const Runner& r : runners) {
        if (!harness::runner_takes(r, prob)) continue;
        harness::run(r, prob);
        std::string report;
        const bool ok = nonfinite_ok(c, prob, report);
        failures += !ok;
        std::printf("%-4s %-13s %-8s %-46s %s\n", ok ? "ok" : "FAIL", harness::backward_kernel(r, prob).c_str(),
                    dtype_name(dt), c.name, report.c_str());
      }
    }
  }
  return failures;
}

// Rows that see a single key: R_s = R_t = 1, so their gradient is exactly 0 on every path (each
// backward gives such rows g = 0 where it reads their statistics). With the upstream gradient 1 on
// those rows and 0 elsewhere, dX and dY must be exactly zero.
int check_single_key(const std::vector<Runner>& runners) {
  int failures = 0;
  std::printf("\nsingle visible key: upstream gradient 1 on those rows, 0 elsewhere; dX, dY must be exactly 0\n");
  for (const RelationKLSingleKeyCase& c : relation_kl_single_key_cases()) {
    for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
      RelationKLProblemSpec spec = c.spec;
      spec.dtype = dt;
      RelationKLProblem prob(spec);
      const int single = relation_kl_single_key_prepare(prob, c.only_visible_key);
      for (const Runner& r : runners) {
        if (!harness::runner_takes(r, prob)) continue;
        harness::run(r, prob);
        double worst = 0;
        for (double v : prob.dx.values()) worst = std::max(worst, std::fabs(v));
        for (double v : prob.dy.values()) worst = std::max(worst, std::fabs(v));
        const bool ok = worst == 0.0 && single > 0;
        failures += !ok;
        std::printf("%-4s %-13s %-8s %-52s %3d rows, max |grad| %.2e\n", ok ? "ok" : "FAIL",
                    harness::backward_kernel(r, prob).c_str(), dtype_name(dt), c.name, single, worst);
      }
    }
  }
  return failures;
}

// The deterministic backward (each "-det" runner) and the CPU's: two backward calls after one
// forward give bitwise-equal dX and dY, on one case of each kernel family (sm_90a: TMA for d = 64 and
// 128, wgmma for d = 80; mma.sync for d = 256 and the "mma" runners; causal and not, GQA cross
// relation, key mask), each large enough for many CTAs to add into one dX row on the default path.
// The default CUDA backward is not required to pass (its dX sums through atomics). Returns the
// number of failures.
int check_bitwise(const std::vector<Runner>& runners) {
  std::vector<RelationKLProblemSpec> specs;
  for (int d : {64, 80, 128, 256}) {
    RelationKLProblemSpec s;
    s.dtype = DType::kBF16, s.seq_len = 1029, s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2;
    s.causal = d != 80, s.dim_student = s.dim_teacher = d, s.student_noise = 0.3, s.seed = uint64_t(d);
    specs.push_back(s);
  }
  {
    RelationKLProblemSpec s = specs.back();
    s.dim_student = s.dim_teacher = 128, s.self_relation = false, s.heads = 4, s.heads_y_student = 1;
    s.mask = KeyMaskKind::kRandom, s.dtype = DType::kF16;
    specs.push_back(s);
  }
  int failures = 0;
  std::printf("\nbitwise: two backward calls give the same dX and dY bits (deterministic backward, CPU)\n");
  for (const RelationKLProblemSpec& spec : specs) {
    RelationKLProblem prob(spec);
    for (const Runner& r : runners) {
      if ((r.cuda && !r.deterministic) || !harness::runner_takes(r, prob)) continue;
      const bool same = harness::run(r, prob, 2);
      failures += !same;
      std::printf("%-4s %-13s %s\n", same ? "ok" : "FAIL", harness::backward_kernel(r, prob).c_str(),
                  relation_kl_describe(spec).c_str());
    }
  }
  return failures;
}

#ifdef LINEAR_ARD_WITH_CUDA
// The forward must be bitwise deterministic; the default backward sums dX through fp32 atomics, so
// its run-to-run difference is reported (the deterministic one's is 0: check_bitwise). Returns the
// number of failures (0 or 1).
int check_determinism() {
  RelationKLProblemSpec s;
  s.dtype = DType::kBF16, s.seq_len = 4096, s.heads = 8, s.heads_y_student = s.heads_y_teacher = 8;
  s.causal = true, s.dim_student = s.dim_teacher = 128, s.student_noise = 0.3;
  RelationKLProblem prob(s);
  harness::DeviceProblem dev(prob);
  auto run = [&](bool deterministic) {
    dev.params().deterministic = deterministic;
    relation_kl_forward_cuda(dev.params());
    relation_kl_backward_cuda(dev.params());
    dev.download(prob);
    return std::make_pair(prob.kl.values(), prob.dx.values());
  };
  const auto [kl0, dx0] = run(false);
  double max_rel = 0, kl_diff = 0, max_abs = 0, det_diff = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto [kl1, dx1] = run(false);
    for (size_t i = 0; i < kl0.size(); ++i) kl_diff = std::max(kl_diff, std::fabs(kl1[i] - kl0[i]));
    double num = 0, den = 0;
    for (size_t i = 0; i < dx0.size(); ++i) {
      num += (dx1[i] - dx0[i]) * (dx1[i] - dx0[i]);
      den += dx0[i] * dx0[i];
      max_abs = std::max(max_abs, std::fabs(dx1[i] - dx0[i]) / (1e-30 + std::fabs(dx0[i])));
    }
    max_rel = std::max(max_rel, std::sqrt(num / std::max(den, 1e-300)));
  }
  const auto [kld, dxd0] = run(true);
  for (int rep = 0; rep < 2; ++rep) {
    const auto [kl1, dx1] = run(true);
    for (size_t i = 0; i < dxd0.size(); ++i) det_diff = std::max(det_diff, std::fabs(dx1[i] - dxd0[i]));
  }
  std::printf("determinism (%s, 6 runs): kl max |diff| %.3e (forward is deterministic); default dx run-to-run "
              "rel L2 %.3e, max elementwise rel %.3e; deterministic dx max |diff| over 3 runs %.3e\n",
              relation_kl_describe(s).c_str(), kl_diff, max_rel, max_abs, det_diff);
  return kl_diff != 0.0 || det_diff != 0.0;
}
#endif

int mode_test(const std::vector<Runner>& runners, bool cuda, bool quick) {
  harness::Errors worst;
  const int reference_failures = check_reference(runners, quick, worst);
  const int nonfinite_failures = check_nonfinite(runners);
  const int single_failures = check_single_key(runners);
  int determinism_failures = check_bitwise(runners);
#ifdef LINEAR_ARD_WITH_CUDA
  if (cuda && !quick) determinism_failures += check_determinism();
#endif
  (void)cuda;
  const int failures = reference_failures + nonfinite_failures + single_failures + determinism_failures;
  std::printf("worst: kl %.2e lse %.2e dx %.2e dy %.2e; %d failure(s)\n", worst.kl, worst.lse, worst.dx, worst.dy,
              failures);
  std::printf("\n%-44s %s\n%-44s %d\n%-44s %d\n%-44s %d\n%-44s %d\n", "section", "failures",
              "vs fp64 reference", reference_failures, "non-finite rule", nonfinite_failures,
              "single-key rows: exact zero gradient", single_failures, "determinism (bitwise backward)",
              determinism_failures);
  return failures == 0 ? 0 : 1;
}

double visible_logits(const RelationKLProblemSpec& s) {
  const double n = double(s.seq_len);
  return double(s.batch) * s.heads * (s.causal ? n * (n + 1) / 2 : n * n);
}

// CPU: best of 3 of forward and of backward; f+b is their sum; the speed-up over the fp64 reference.
void perf_cpu(const std::vector<RelationKLProblemSpec>& cases) {
  std::printf("%-58s | %9s %8s | %9s %8s | %9s %8s | %11s\n", "case", "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s",
              "f+b ms", "GFLOP/s", "vs fp64 ref");
  auto best_ms = [](const std::function<void()>& fn) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) best = std::min(best, harness::time_ms(fn, 1, 0, false));
    return best;
  };
  for (const RelationKLProblemSpec& s : cases) {
    RelationKLProblem problem(s);
    RelationKLParams& p = problem.params();
    const double logits = visible_logits(s), d = s.dim_student;
    const double fwd = best_ms([&] { relation_kl_forward_cpu(p); });
    const double bwd = best_ms([&] { relation_kl_backward_cpu(p); });
    char ratio[32] = "-";
    if (s.seq_len <= 1024) {  // the dense fp64 reference is O(n^2 d) scalar code: keep it short
      std::snprintf(ratio, sizeof ratio, "%.1fx", harness::time_ms([&] { relation_kl_reference(p, true); }, 1, 0, false) /
                                                      (fwd + bwd));
    }
    std::printf("%-58s | %9.2f %8.1f | %9.2f %8.1f | %9.2f %8.1f | %11s\n", relation_kl_describe(s).c_str(), fwd,
                4 * d * logits / fwd * 1e-6, bwd, 8 * d * logits / bwd * 1e-6, fwd + bwd,
                12 * d * logits / (fwd + bwd) * 1e-6, ratio);
  }
}

#ifdef LINEAR_ARD_WITH_CUDA
// CUDA: median of 10 (5 from n = 16K) after 2 warm-up runs, each kernels choice in turn.
void perf_cuda(const std::vector<Runner>& runners, const std::vector<RelationKLProblemSpec>& cases) {
  std::printf("%-11s %-13s %-62s | %9s | %9s | %9s | %8s\n", "kernels", "path", "case", "fwd ms", "bwd ms", "f+b ms",
              "TFLOP/s");
  for (const RelationKLProblemSpec& s : cases) {
    RelationKLProblem problem(s);
    harness::DeviceProblem dev(problem);
    RelationKLParams& p = dev.params();
    const int reps = s.seq_len <= 8192 ? 10 : 5;
    for (const Runner& r : runners) {
      p.deterministic = r.deterministic;
      const double fwd = harness::time_ms([&] { relation_kl_forward_cuda_kernels(p, r.kernels); }, reps, 2, true);
      const double bwd = harness::time_ms([&] { relation_kl_backward_cuda_kernels(p, r.kernels); }, reps, 2, true);
      const double both = harness::time_ms([&] {
        relation_kl_forward_cuda_kernels(p, r.kernels);
        relation_kl_backward_cuda_kernels(p, r.kernels);
      }, reps, 2, true);
      std::printf("%-11s %-13s %-62s | %9.3f | %9.3f | %9.3f | %8.0f\n", r.name.c_str(),
                  harness::backward_kernel(r, problem).c_str(), relation_kl_describe(s).c_str(), fwd, bwd, both,
                  12.0 * s.dim_student * visible_logits(s) / (both * 1e-3) * 1e-12);
      std::fflush(stdout);
    }
  }
}
#endif

std::vector<RelationKLProblemSpec> perf_cases(bool cuda, const std::string& sizes) {
  std::vector<RelationKLProblemSpec> cases = relation_kl_perf_cases(cuda);
  if (sizes.empty()) return cases;
  std::vector<RelationKLProblemSpec> chosen;
  size_t start = 0;
  while (start <= sizes.size()) {
    const size_t end = std::min(sizes.find(',', start), sizes.size());
    RelationKLProblemSpec s = cases.front();
    s.seq_len = std::stoll(sizes.substr(start, end - start));
    chosen.push_back(s);
    start = end + 1;
  }
  return chosen;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "relation_kl_ops: %s\nusage: relation_kl_ops --backend cpu|cuda --mode test|perf [--quick] "
               "[--kernels default,mma,simt,default-det,mma-det] [--sizes N,N,...]\n",
               why);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend, mode, kernels, sizes;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      quick = true;
    } else if (has_value && (arg == "--backend" || arg == "--mode" || arg == "--kernels" || arg == "--sizes")) {
      (arg == "--backend" ? backend : arg == "--mode" ? mode : arg == "--kernels" ? kernels : sizes) = argv[++i];
    } else {
      return usage(("unknown or incomplete argument " + arg).c_str());
    }
  }
  if (mode != "test" && mode != "perf") return usage("--mode must be test or perf");
  const bool cuda = backend == "cuda";
  if (kernels.empty()) kernels = mode == "test" ? "default,mma,simt,default-det,mma-det" : "default";
  try {
    const std::vector<Runner> runners = harness::runners(backend, kernels);
    std::printf("relation_kl_ops: backend %s, kernels %s\n", backend.c_str(), cuda ? kernels.c_str() : "cpu");
    if (mode == "test") return mode_test(runners, cuda, quick);
    if (!cuda) {
      perf_cpu(perf_cases(false, sizes));
      return 0;
    }
#ifdef LINEAR_ARD_WITH_CUDA
    perf_cuda(runners, perf_cases(true, sizes));
#endif
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "relation_kl_ops: %s\n", e.what());
    return 1;
  }
}

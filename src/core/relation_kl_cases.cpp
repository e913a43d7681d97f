// The relation-KL case table (linear_ard/core/relation_kl_cases.h).
#include "linear_ard/core/relation_kl_cases.h"

#include <cstdio>
#include <limits>

namespace linear_ard {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Causal rows before the first visible key see nothing; the last key is causally hidden from the
// other rows: the base of the non-finite cases.
RelationKLProblemSpec nonfinite_base() {
  RelationKLProblemSpec s;
  s.batch = 2, s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2, s.seq_len = 97;
  s.dim_student = s.dim_teacher = 64, s.causal = true, s.student_noise = 0.3, s.seed = 7;
  return s;
}

// Plants `value` into every element of the teacher's X, for all rows < n.
void fill_teacher_x(RelationKLProblem& p, double value) {
  const RelationKLProblemSpec& s = p.spec();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_len; ++i)
        for (int32_t k = 0; k < s.dim_teacher; ++k) p.set_input(true, false, b, h, i, k, value);
}

}  // namespace

std::string relation_kl_describe(const RelationKLProblemSpec& s) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s B%lld H%d/%d/%d n%lld d%d/%d %s%s%smask%d%s std%.0f%s%s seed%llu",
                dtype_name(s.dtype), (long long)s.batch, s.heads, s.heads_y_student, s.heads_y_teacher,
                (long long)s.seq_len, s.dim_student, s.dim_teacher, s.causal ? "causal " : "",
                s.self_relation ? "self " : "xy ", s.strided ? "strided " : "", int(s.mask),
                s.last_batch_masked ? " lastmasked" : "", s.logit_std, s.student_noise >= 0 ? " near" : "",
                s.negative_teacher_scale ? " tscale-" : "", (unsigned long long)s.seed);
  return buf;
}

std::vector<RelationKLProblemSpec> relation_kl_reference_cases(bool quick) {
  std::vector<RelationKLProblemSpec> cases;
  uint64_t seed = 1;
  auto add = [&](RelationKLProblemSpec s) {
    s.seed = seed++;
    cases.push_back(s);
  };
  if (quick) {
    RelationKLProblemSpec s;
    s.dtype = DType::kBF16, s.seq_len = 70, s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2;
    s.causal = true, s.dim_student = s.dim_teacher = 128, s.mask = KeyMaskKind::kRandom;
    add(s);
    s.self_relation = false, s.heads_y_student = 1, s.strided = true, s.dim_student = 80;
    add(s);
    s.dtype = DType::kF32;
    add(s);
    s.dtype = DType::kF16, s.dim_student = s.dim_teacher = 256, s.strided = false;
    add(s);
    return cases;
  }
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int d : {64, 80, 96, 128, 256}) {
      for (int64_t n : {1LL, 97LL, 333LL}) {
        for (bool causal : {false, true}) {
          RelationKLProblemSpec s;
          s.dtype = dt, s.seq_len = n, s.causal = causal, s.dim_student = s.dim_teacher = d;
          s.batch = 2, s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2;
          s.mask = n == 97 ? KeyMaskKind::kLeading : KeyMaskKind::kNone;
          s.student_noise = 0.3;
          add(s);
        }
      }
    }
  }
  // GQA, X != Y, different head dims, strided views, masks with empty rows, large logits.
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (auto dims : {std::pair<int, int>{64, 128}, {128, 64}, {80, 128}, {96, 256}, {128, 128}}) {
      for (int variant = 0; variant < 4; ++variant) {
        RelationKLProblemSpec s;
        s.dtype = dt, s.dim_student = dims.first, s.dim_teacher = dims.second;
        s.batch = 2, s.heads = 4, s.seq_len = variant % 2 ? 201 : 130;
        s.self_relation = false;
        s.heads_y_student = variant == 0 ? 4 : (variant == 1 ? 2 : 1);
        s.heads_y_teacher = variant == 2 ? 2 : 4;
        s.causal = variant != 1;
        s.strided = variant >= 2;
        s.mask = variant == 3 ? KeyMaskKind::kRandom : (variant == 1 ? KeyMaskKind::kLeading : KeyMaskKind::kNone);
        s.last_batch_masked = variant == 2;
        s.logit_std = variant == 3 ? 20.0 : 2.0;  // 20: logits reach about +-80
        add(s);
      }
    }
  }
  // CUDA launch order: 9 (batch, head) pairs, one more than the library's causal group at this
  // length (8), so the last group is short (cta_place).
  {
    RelationKLProblemSpec s;
    s.dtype = DType::kBF16, s.seq_len = 333, s.causal = true, s.dim_student = s.dim_teacher = 128;
    s.batch = 3, s.heads = 3, s.heads_y_student = s.heads_y_teacher = 3, s.student_noise = 0.3;
    add(s);
  }
  // A negative teacher scale: the sm_90a forward's unfolded update (fwd_fold_ok false).
  {
    RelationKLProblemSpec s;
    s.dtype = DType::kBF16, s.seq_len = 200, s.causal = true, s.dim_student = s.dim_teacher = 128;
    s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2, s.negative_teacher_scale = true;
    add(s);
  }
  // Longer sequences: many key tiles per row block, many row tiles per key tile.
  for (int64_t n : {1000LL, 1537LL}) {
    RelationKLProblemSpec s;
    s.dtype = DType::kBF16, s.seq_len = n, s.causal = true, s.dim_student = s.dim_teacher = 128;
    s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2, s.student_noise = 0.3, s.logit_std = 4.0;
    add(s);
    s.self_relation = false, s.heads_y_student = 1, s.causal = false, s.mask = KeyMaskKind::kRandom;
    add(s);
  }
  return cases;
}

double relation_kl_huge(DType dtype) {
  if (dtype == DType::kF16) return kInf;
  return dtype == DType::kF64 ? 1e200 : 3e38;
}

std::vector<RelationKLNonFiniteCase> relation_kl_nonfinite_cases() {
  const RelationKLProblemSpec base = nonfinite_base();
  std::vector<RelationKLNonFiniteCase> cases;
  {
    RelationKLProblemSpec s = base;  // cross: teacher X row 40 meets finite Y rows, only row 40 is hit
    s.self_relation = false, s.heads_y_teacher = 1, s.seq_len = 200, s.causal = false;
    cases.push_back({"teacher NaN in one row", s, [](RelationKLProblem& p) { p.set_input(true, false, 1, 1, 40, 5, kNaN); },
                     false, {}});
  }
  {
    RelationKLProblemSpec s = base;
    s.mask = KeyMaskKind::kLeading;  // rows before the first visible key see nothing: KL 0 stays
    cases.push_back({"teacher NaN column, leading padding", s, [](RelationKLProblem& p) {
                       for (int h = 0; h < 2; ++h)
                         for (int64_t i = 0; i < 97; ++i) p.set_input(true, false, 0, h, i, 3, kNaN);
                     }, false, {}});
  }
  {
    RelationKLProblemSpec s = base;
    s.causal = false, s.seq_len = 200;
    cases.push_back({"teacher all NaN", s, [](RelationKLProblem& p) { fill_teacher_x(p, kNaN); }, false, {}});
  }
  cases.push_back({"student NaN in one row", base, [](RelationKLProblem& p) { p.set_input(false, false, 0, 1, 30, 0, kNaN); },
                   true, {}});
  {
    RelationKLProblemSpec s = base;
    s.self_relation = false, s.causal = false;
    cases.push_back({"Inf inputs", s, [](RelationKLProblem& p) {
                       p.set_input(false, false, 0, 0, 11, 2, kInf);
                       p.set_input(true, true, 1, 1, 7, 4, -kInf);
                     }, true, {}});
  }
  {
    RelationKLProblemSpec s = base;  // "a k projection of 3e38": every teacher logit overflows
    s.seq_len = 200;
    std::vector<int64_t> all;
    for (int64_t o = 0; o < 2 * 2 * 200; ++o) all.push_back(o);
    cases.push_back({"teacher logits overflow to +inf", s,
                     [](RelationKLProblem& p) { fill_teacher_x(p, relation_kl_huge(p.spec().dtype)); }, false, all});
  }
  {
    RelationKLProblemSpec s = base;  // row 20 sees one logit of -inf among finite ones
    s.self_relation = false, s.causal = false;
    cases.push_back({"one teacher logit overflows to -inf", s, [](RelationKLProblem& p) {
                       const double v = relation_kl_huge(p.spec().dtype);
                       p.set_input(true, false, 0, 0, 20, 0, v);
                       for (int64_t j = 0; j < 97; ++j) p.set_input(true, true, 0, 0, j, 0, j == 9 ? -v : 1e-3);
                     }, false, {20}});
  }
  {
    RelationKLProblemSpec s = base;
    s.causal = false, s.mask = KeyMaskKind::kRandom;
    cases.push_back({"teacher NaN in a padding key", s, [](RelationKLProblem& p) {
                       int64_t padded = 0;
                       while (p.params().key_mask[padded] != 0) ++padded;
                       for (int h = 0; h < 2; ++h)
                         for (int k = 0; k < 64; ++k) p.set_input(true, false, 0, h, padded, k, kNaN);
                     }, false, {}});
  }
  cases.push_back({"teacher NaN in the causally hidden last key", base,
                   [](RelationKLProblem& p) { p.set_input(true, false, 0, 0, 96, 0, kNaN); }, false, {}});
  return cases;
}

std::vector<RelationKLSingleKeyCase> relation_kl_single_key_cases() {
  RelationKLProblemSpec base;
  base.heads = 2, base.heads_y_student = base.heads_y_teacher = 2, base.seq_len = 97, base.dim_student = 128;
  base.dim_teacher = 128, base.causal = true, base.student_noise = 0.3, base.logit_std = 4.0, base.seed = 11;
  std::vector<RelationKLSingleKeyCase> cases;
  cases.push_back({"causal: row 0", base, -1});
  {
    RelationKLProblemSpec s = base;
    s.batch = 2, s.mask = KeyMaskKind::kLeading;
    cases.push_back({"causal, leading padding: the first real row", s, -1});
  }
  {
    RelationKLProblemSpec s = base;
    s.causal = false, s.mask = KeyMaskKind::kRandom;
    cases.push_back({"one visible key: every row", s, 5});
  }
  {
    RelationKLProblemSpec s = base;
    s.causal = false, s.seq_len = 1;
    cases.push_back({"n = 1", s, -1});
  }
  {
    RelationKLProblemSpec s = base;
    s.self_relation = false, s.heads = 4, s.heads_y_student = 1, s.heads_y_teacher = 2, s.seq_len = 300;
    cases.push_back({"causal, GQA cross relation, n = 300", s, -1});
  }
  // The other kernel families' buckets: d = 64 (sm_90a: TMA), 80 (the 96 bucket: wgmma without TMA),
  // 256 (mma.sync everywhere), over several CTAs.
  {
    RelationKLProblemSpec s = base;
    s.dim_student = s.dim_teacher = 64, s.seq_len = 300;
    cases.push_back({"causal: row 0, d = 64, n = 300", s, -1});
  }
  {
    RelationKLProblemSpec s = base;
    s.dim_student = s.dim_teacher = 80, s.seq_len = 200, s.mask = KeyMaskKind::kLeading;
    cases.push_back({"causal, leading padding, d = 80, n = 200", s, -1});
  }
  {
    RelationKLProblemSpec s = base;
    s.dim_student = s.dim_teacher = 256;
    cases.push_back({"causal: row 0, d = 256", s, -1});
  }
  return cases;
}

int relation_kl_single_key_prepare(RelationKLProblem& problem, int64_t only_visible_key) {
  const RelationKLProblemSpec& s = problem.spec();
  RelationKLParams& p = problem.params();
  if (only_visible_key >= 0) {
    uint8_t* mask = const_cast<uint8_t*>(p.key_mask);
    for (int64_t j = 0; j < s.batch * s.seq_len; ++j) mask[j] = j % s.seq_len == only_visible_key;
  }
  int single = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_len; ++i) {
        int64_t seen = 0;
        for (int64_t j = 0; j < (p.causal ? i + 1 : s.seq_len); ++j) {
          seen += p.key_mask == nullptr || p.key_mask[b * p.key_mask_batch_stride + j] != 0;
        }
        problem.grad_kl.set(size_t((b * s.heads + h) * s.seq_len + i), seen == 1 ? 1.0 : 0.0);
        single += seen == 1;
      }
  return single;
}

std::vector<RelationKLProblemSpec> relation_kl_perf_cases(bool cuda) {
  std::vector<RelationKLProblemSpec> cases;
  for (int64_t n : cuda ? std::vector<int64_t>{1024, 2048, 4096, 8192, 16384} : std::vector<int64_t>{512, 1024, 2048, 4096}) {
    RelationKLProblemSpec s;
    s.heads = cuda ? 32 : 4;
    s.heads_y_student = s.heads_y_teacher = s.heads;
    s.seq_len = n;
    s.dim_student = s.dim_teacher = cuda ? 128 : 64;
    s.dtype = cuda ? DType::kBF16 : DType::kF32;
    s.causal = true;
    s.student_noise = cuda ? 0.3 : -1.0;
    cases.push_back(s);
  }
  return cases;
}

RelationKLProblemSpec relation_kl_appendix_l_spec(int64_t n, DType dtype) {
  RelationKLProblemSpec spec;
  spec.heads = 4;
  spec.heads_y_student = spec.heads_y_teacher = 4;
  spec.seq_len = n;
  spec.dim_student = spec.dim_teacher = 64;
  spec.causal = true;
  spec.student_noise = 0.5;
  spec.dtype = dtype;
  spec.seed = uint64_t(n);
  return spec;
}

}  // namespace linear_ard

// rope_compose: the student's RoPE over a teacher that may already carry its own scaling.
//
// The rule (docs/rope.md): the teacher's RoPE is its native positions, of context T; the request
// asks for T x f. A request of the teacher's own type scales the teacher's factor a to a x f and
// keeps the rest of the teacher's dict (its original length, llama3's bands, yarn's betas, the
// longrope factors, the long ones stretched by f); a request of another type is that type over the
// original (unscaled) frequencies with factor = T x f / original length. Linear interpolation
// divides the teacher's own frequencies by f, which a linear or longrope dict can hold again, and
// dynamic NTK recomputes the frequencies from rope_theta alone, so each composes only with its own
// type (and linear also with longrope and the unscaled RoPE).
#include "linear_ard/model/rope_compose.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "linear_ard/model/model_family.h"  // defines: model_family_of, model_family_takes_rope
#include "linear_ard/model/rope.h"          // defines: rope_frequencies

namespace linear_ard::model {
namespace {

// The teacher's factor as transformers resolves it: 1 unscaled; longrope without one, the ratio of
// max_position_embeddings to the original length.
double teacher_factor(const ModelConfig& t) {
  if (t.rope.type == RopeType::kDefault) return 1.0;
  if (t.rope.factor) return *t.rope.factor;
  return static_cast<double>(t.max_position_embeddings) / static_cast<double>(rope_original_max_positions(t, t.rope));
}

bool has_explicit_original(const ModelConfig& t) {
  return t.original_max_position_embeddings || t.rope.original_max_position_embeddings;
}

// The original (pre-scaling) context length of the teacher's RoPE.
int64_t teacher_original(const ModelConfig& t) {
  switch (t.rope.type) {
    case RopeType::kDefault:
    case RopeType::kDynamic:
      return t.max_position_embeddings;
    case RopeType::kLinear:
      if (has_explicit_original(t)) return rope_original_max_positions(t, t.rope);
      return std::llround(static_cast<double>(t.max_position_embeddings) / teacher_factor(t));
    default:
      return rope_original_max_positions(t, t.rope);
  }
}

// Whether a request of type `want` composes with a teacher RoPE of type `have` (before the family's
// own list of types): see the file comment.
bool composable(RopeType have, RopeType want) {
  if (want == RopeType::kLinear)
    return have == RopeType::kDefault || have == RopeType::kLinear || have == RopeType::kLongrope;
  if (want == RopeType::kDynamic) return have == RopeType::kDefault || have == RopeType::kDynamic;
  return want != RopeType::kDefault;
}

// The type the student's config.json holds for a request of type `want` (Phi-3 writes linear
// interpolation as longrope with every factor equal), or nullopt when the family takes neither.
std::optional<RopeType> written_type(const ModelFamily& family, RopeType want) {
  if (model_family_takes_rope(family, want)) return want;
  if (want == RopeType::kLinear && model_family_takes_rope(family, RopeType::kLongrope)) return RopeType::kLongrope;
  return std::nullopt;
}

[[noreturn]] void refuse(const ModelConfig& t, RopeType want) {
  const ModelFamily& family = model_family_of(t);
  std::string why;
  if (!written_type(family, want))
    why = std::string(family.architecture) + " takes rope dicts of type " + model_family_rope_names(family) + " only";
  else if (want == RopeType::kLinear)
    why = "linear interpolation divides the teacher's frequencies by the factor, which only a linear or longrope dict holds again";
  else
    why = "dynamic NTK recomputes the frequencies from rope_theta alone, dropping the teacher's scaling";
  std::string ok;
  for (RopeType w : {RopeType::kLinear, RopeType::kDynamic, RopeType::kYarn, RopeType::kLlama3, RopeType::kLongrope})
    if (composable(t.rope.type, w) && written_type(family, w)) ok += (ok.empty() ? "" : ", ") + std::string(rope_type_name(w));
  throw std::invalid_argument(std::string("rope_type ") + rope_type_name(want) + " over a teacher whose config.json has rope_type " +
                              rope_type_name(t.rope.type) + ": transformers' rope dict holds one scaling type, and " + why +
                              " (with this teacher: " + (ok.empty() ? "none" : ok) + ")");
}

std::vector<double> scaled(const std::vector<double>& xs, double f) {
  std::vector<double> out;
  for (double x : xs) out.push_back(x * f);
  return out;
}

// Linear interpolation by f on top of the teacher's frequencies: a linear dict for an unscaled or
// linear teacher, else (longrope teacher, or a family taking longrope only) a longrope dict whose
// factors are the teacher's (1 when unscaled) times f, at the teacher's attention scaling.
RopeConfig linear_on_top(const ModelConfig& t, const RopeConfig& request, double f) {
  RopeConfig r = request;
  const RopeConfig& have = t.rope;
  if (written_type(model_family_of(t), RopeType::kLinear) == RopeType::kLinear && have.type != RopeType::kLongrope) {
    r.factor = teacher_factor(t) * f;
    if (!r.original_max_position_embeddings)
      r.original_max_position_embeddings = have.type == RopeType::kLinear ? have.original_max_position_embeddings
                                                                         : std::optional<int64_t>(t.max_position_embeddings);
    return r;
  }
  const auto half = static_cast<size_t>(rope_rotary_dim(t, have) / 2);
  const bool unscaled = have.type == RopeType::kDefault;
  r.type = RopeType::kLongrope;
  r.short_factor = unscaled ? std::vector<double>(half, f) : scaled(have.short_factor, f);
  r.long_factor = unscaled ? std::vector<double>(half, f) : scaled(have.long_factor, f);
  r.attention_factor = rope_frequencies(t, have).attention_scaling;
  r.factor = teacher_factor(t) * f;
  if (!r.original_max_position_embeddings) r.original_max_position_embeddings = teacher_original(t);
  return r;
}

// A request of the teacher's own type: the teacher's factor times f, the rest of its dict kept where
// the request does not say otherwise (the longrope long factors stretched by f; an attention factor
// tuned for the teacher's factor is not kept, so transformers derives it from the new one).
RopeConfig same_type(const ModelConfig& t, const RopeConfig& request, double f) {
  RopeConfig r = request;
  const RopeConfig& have = t.rope;
  r.factor = teacher_factor(t) * f;
  auto inherit = [](auto& mine, const auto& theirs) {
    if (!mine) mine = theirs;
  };
  inherit(r.original_max_position_embeddings, have.original_max_position_embeddings);
  inherit(r.beta_fast, have.beta_fast);
  inherit(r.beta_slow, have.beta_slow);
  inherit(r.mscale, have.mscale);
  inherit(r.mscale_all_dim, have.mscale_all_dim);
  inherit(r.truncate, have.truncate);
  inherit(r.low_freq_factor, have.low_freq_factor);
  inherit(r.high_freq_factor, have.high_freq_factor);
  if (r.short_factor.empty()) r.short_factor = have.short_factor;
  if (r.long_factor.empty()) r.long_factor = scaled(have.long_factor, f);
  return r;
}

}  // namespace

int64_t rope_teacher_context(const ModelConfig& t) {
  const int64_t m = t.max_position_embeddings;
  const double a = teacher_factor(t);
  switch (t.rope.type) {
    case RopeType::kDefault:
      return m;
    case RopeType::kLinear:
      if (!has_explicit_original(t)) return m;
      break;
    case RopeType::kDynamic:
      return std::llround(static_cast<double>(m) * a);
    default:
      break;
  }
  return std::max(m, static_cast<int64_t>(std::llround(static_cast<double>(teacher_original(t)) * a)));
}

ModelConfig rope_compose(const ModelConfig& teacher, const RopeConfig& request) {
  if (!request.factor) throw std::invalid_argument("needs a factor (the context extension ratio)");
  const RopeConfig& have = teacher.rope;
  const RopeType want = request.type;
  if (!composable(have.type, want) || !written_type(model_family_of(teacher), want)) refuse(teacher, want);
  const double f = *request.factor;
  const int64_t original = request.original_max_position_embeddings.value_or(teacher_original(teacher));
  const int64_t target = std::llround(static_cast<double>(rope_teacher_context(teacher)) * f);

  ModelConfig s = teacher;
  if (want == RopeType::kLinear) {
    s.rope = linear_on_top(teacher, request, f);
  } else if (want == have.type) {
    s.rope = same_type(teacher, request, f);
  } else if (want == RopeType::kDynamic) {
    s.rope = request;  // over an unscaled teacher: its max_position_embeddings stays the threshold
  } else {
    s.rope = request;
    s.rope.factor = static_cast<double>(target) / static_cast<double>(original);
    s.rope.original_max_position_embeddings = original;
  }
  if (want != RopeType::kDynamic) {
    s.max_position_embeddings = target;
    if (!s.rope.original_max_position_embeddings) s.rope.original_max_position_embeddings = original;
  }
  // A top-level original_max_position_embeddings (Phi-3) wins over the dict's in transformers.
  if (s.original_max_position_embeddings) s.original_max_position_embeddings = s.rope.original_max_position_embeddings;
  if (const auto key = rope_config_missing(s.rope))
    throw std::invalid_argument(std::string("rope_type ") + rope_type_name(s.rope.type) + " needs " + *key +
                                " (the teacher's rope_type is " + rope_type_name(have.type) +
                                ": only a teacher of the same type passes its own on)");
  model_config_validate(s);
  return s;
}

}  // namespace linear_ard::model

// RULER's synthetic tasks (NVIDIA/RULER, scripts/synthetic.yaml and data/synthetic/*.py): the 13
// task configurations, and building one sample for a tokenizer at a token length — the prompt
// (RULER's template and answer prefix), its reference answers, and the haystack size found by
// binary search so that prompt + the task's new tokens fit the length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/ruler_data.h"
#include "linear_ard/io/tokenizer.h"

namespace linear_ard::eval {

enum class RulerKind { ruler_kind_niah, ruler_kind_vt, ruler_kind_cwe, ruler_kind_fwe, ruler_kind_qa };

struct RulerTask {
  std::string name;
  RulerKind kind = RulerKind::ruler_kind_niah;
  int64_t max_new_tokens = 128;  // RULER's tokens_to_generate
  bool match_part = false;       // qa: string_match_part; every other task: string_match_all
  // niah
  std::string haystack;                 // "noise", "essay" (noise when no essay is given) or "needle"
  std::string key_type, value_type;     // "words", "numbers" or "uuids"
  int64_t num_keys = 1, num_values = 1, num_queries = 1;
  // vt
  int64_t num_chains = 1, num_hops = 4;
  // cwe
  int64_t freq_cw = 30, freq_ucw = 3, num_cw = 10;
  // fwe
  double alpha = 2.0;
  // qa
  std::string dataset;  // "squad" or "hotpotqa"
};

// niah_single_1/2/3, niah_multikey_1/2/3, niah_multivalue, niah_multiquery, vt, cwe, fwe, qa_1
// (SQuAD), qa_2 (HotpotQA), with RULER's settings.
const std::vector<RulerTask>& ruler_tasks();
// Throws std::invalid_argument listing the known names for an unknown one.
const RulerTask& ruler_task_find(const std::string& name);

struct RulerSample {
  int64_t index = 0;                 // the sample's number in its cell (a prepared file's "index")
  std::string prompt;                // task template + answer prefix; BOS is added when encoding
  std::vector<std::string> answers;  // references for string_match_all / string_match_part
  int64_t tokens = 0;                // prompt tokens with BOS; tokens + max_new_tokens <= length
  int64_t haystack = 0;              // haystack units: sentences, essay words, list words or documents
  std::string haystack_type;         // what was used: noise, essay, needle, words, documents, prepared
};

// The sample of `task` for `seed` at `length` tokens: the largest haystack whose prompt (with BOS)
// plus task.max_new_tokens fits `length`, found by binary search over the haystack size; needles,
// keys, values and queries depend on the seed only, not on the haystack size. Deterministic for a
// seed. Throws std::invalid_argument when not even the smallest haystack fits, or when the task
// needs data `data` lacks (QA set, enough words).
RulerSample ruler_sample_make(const RulerTask& task, const RulerData& data, const io::Tokenizer& tokenizer,
                              int64_t length, uint64_t seed);

// RULER's postprocess_pred: strip, control characters (U+0000..U+001F) to newlines, strip again.
std::string ruler_prediction_clean(const std::string& prediction);

}  // namespace linear_ard::eval

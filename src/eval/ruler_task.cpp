// RULER task configurations and sample generation (prompts, answers, haystack fitting).
#include "linear_ard/eval/ruler_task.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>

namespace linear_ard::eval {

namespace {

// RULER's templates (scripts/data/synthetic/constants.py), answer prefix appended as RULER does for
// base models (no chat template).
constexpr const char* niah_template =
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
    "{type_needle_v} for {query} mentioned in the provided text? The special magic {type_needle_v} for "
    "{query} mentioned in the provided text are";
constexpr const char* niah_needle = "One of the special magic {type_needle_v} for {key} is: {value}.";
constexpr const char* vt_template =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
    "Question: Find all variables that are assigned the value {query} in the text above. Answer: According "
    "to the chain(s) of variable assignment in the text above, {num_v} variables are assigned the value "
    "{query}, they are: ";
constexpr const char* cwe_template =
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
    "ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above "
    "list? Answer: The top 10 words that appear most often in the list are:";
constexpr const char* fwe_template =
    "Read the following coded text and track the frequency of each coded word. Find the three most "
    "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
    "the dots '....'. What are the three most frequently appeared words in the above coded text? Answer: "
    "According to the coded text above, the three most frequently appeared words are:";
constexpr const char* qa_template =
    "Answer the question based on the given documents. Only give me the answer and do not output any other "
    "words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given "
    "documents. Only give me the answer and do not output any other words.\n\nQuestion: {query} Answer:";
constexpr const char* noise_sentence =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

// Python's str.replace: every occurrence, left to right.
std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
  return s;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

using Rng = std::mt19937_64;

uint64_t below(Rng& rng, uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); }

// k distinct indices of [0, n) in random order (Python's random.sample(range(n), k)).
std::vector<int64_t> sample_indices(Rng& rng, int64_t n, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  for (int64_t i = 0; i < k; ++i) std::swap(idx[i], idx[i + static_cast<int64_t>(below(rng, n - i))]);
  idx.resize(static_cast<size_t>(k));
  return idx;
}

template <class T>
void shuffle(Rng& rng, std::vector<T>& v) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(rng, i)]);
}

std::string random_number(Rng& rng) { return std::to_string(1000000 + below(rng, 9000000)); }  // 7 digits

std::string random_uuid(Rng& rng) {  // uuid4 text of 128 random bits, as uuid.UUID(int=..., version=4)
  uint64_t hi = rng(), lo = rng();
  hi = (hi & ~0xF000ull) | 0x4000ull;
  lo = (lo & ~(0xC000ull << 48)) | (0x8000ull << 48);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx", (unsigned long long)(hi >> 32),
                (unsigned long long)((hi >> 16) & 0xFFFF), (unsigned long long)(hi & 0xFFFF),
                (unsigned long long)(lo >> 48), (unsigned long long)(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string random_of(Rng& rng, const std::string& type, const std::vector<std::string>& words) {
  if (type == "numbers") return random_number(rng);
  if (type == "uuids") return random_uuid(rng);
  // RULER's word keys are "adjective-noun" pairs; here two words of the word list.
  return words[below(rng, words.size())] + "-" + words[below(rng, words.size())];
}

std::string format(std::string t, const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [k, v] : fields) t = replace_all(t, "{" + k + "}", v);
  return t;
}

struct Built {
  std::string prompt;
  std::vector<std::string> answers;
};
// One task's prompt for a haystack size; the same seed gives the same needles for every size.
using Builder = std::function<Built(int64_t)>;

// Essay words [0, n) (repeated past the end, as RULER does) grouped into sentences: a sentence ends
// at a word ending in . ! or ? (optionally followed by closing quotes or brackets). A simple stand-in
// for nltk's sent_tokenize.
std::vector<std::string> essay_sentences(const std::vector<std::string>& words, int64_t n) {
  std::vector<std::string> sentences;
  std::string cur;
  for (int64_t i = 0; i < n; ++i) {
    const std::string& w = words[static_cast<size_t>(i) % words.size()];
    cur += (cur.empty() ? "" : " ") + w;
    const size_t e = w.find_last_not_of("\"')]");
    if (e != std::string::npos && (w[e] == '.' || w[e] == '!' || w[e] == '?')) {
      sentences.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) sentences.push_back(cur);
  return sentences;
}

Builder niah_builder(const RulerTask& t, const RulerData& data, uint64_t seed, std::string& haystack_type) {
  const bool essay = t.haystack == "essay" && !data.essay_words.empty();
  haystack_type = essay ? "essay" : (t.haystack == "needle" ? "needle" : "noise");
  if ((t.key_type == "words" || t.value_type == "words") && data.words.size() < 2)
    throw std::invalid_argument("task " + t.name + " needs a word list of at least 2 words");
  return [&t, &data, seed, essay](int64_t n) {
    Rng content(seed), place(seed ^ 0x9E3779B97F4A7C15ull);
    const int64_t num_keys = std::max(t.num_keys, t.num_queries);
    std::vector<std::string> keys, needles;
    std::vector<std::vector<std::string>> values;
    for (int64_t k = 0; k < num_keys; ++k) {
      keys.push_back(random_of(content, t.key_type, data.words));
      values.emplace_back();
      for (int64_t v = 0; v < t.num_values; ++v) {
        values.back().push_back(random_of(content, t.value_type, data.words));
        needles.push_back(format(niah_needle, {{"type_needle_v", t.value_type}, {"key", keys.back()},
                                               {"value", values.back().back()}}));
      }
    }
    shuffle(content, needles);
    const auto picked = sample_indices(content, num_keys, t.num_queries);
    std::vector<std::string> queries, answers;
    for (int64_t i : picked) {
      queries.push_back(keys[i]);
      answers.insert(answers.end(), values[i].begin(), values[i].end());
    }
    std::string context;
    if (essay) {
      const auto sents = essay_sentences(data.essay_words, n);
      // 40 depths, round(linspace(0, 100, 40)); each needle at a distinct one.
      std::vector<int64_t> depths;
      for (int i = 0; i < 40; ++i) depths.push_back(std::llround(100.0 * i / 39.0));
      std::vector<int64_t> pos;
      for (int64_t d : sample_indices(place, 40, static_cast<int64_t>(needles.size())))
        pos.push_back(static_cast<int64_t>(sents.size()) * depths[d] / 100);
      std::sort(pos.begin(), pos.end());
      std::vector<std::string> parts;
      int64_t last = 0;
      for (size_t i = 0; i < needles.size(); ++i) {
        parts.push_back(join(std::vector<std::string>(sents.begin() + last, sents.begin() + pos[i]), " "));
        parts.push_back(needles[i]);
        last = pos[i];
      }
      parts.push_back(join(std::vector<std::string>(sents.begin() + last, sents.end()), " "));
      context = join(parts, " ");
    } else {
      std::vector<std::string> sentences;
      for (int64_t i = 0; i < n; ++i)
        sentences.push_back(t.haystack == "needle"
                                ? format(niah_needle, {{"type_needle_v", t.value_type},
                                                       {"key", random_of(place, t.key_type, data.words)},
                                                       {"value", random_of(place, t.value_type, data.words)}})
                                : std::string(noise_sentence));
      std::vector<int64_t> at = n >= static_cast<int64_t>(needles.size())
                                    ? sample_indices(place, n, static_cast<int64_t>(needles.size()))
                                    : std::vector<int64_t>(needles.size(), 0);
      std::sort(at.rbegin(), at.rend());
      for (size_t i = 0; i < needles.size(); ++i) sentences.insert(sentences.begin() + at[i], needles[i]);
      context = join(sentences, "\n");
    }
    std::string query = queries.size() == 1 ? queries[0]
                                            : join(std::vector<std::string>(queries.begin(), queries.end() - 1), ", ") +
                                                  ", and " + queries.back();
    std::string tmpl = niah_template, type_v = t.value_type;
    if (t.num_queries * t.num_values == 1) {  // RULER's singular form
      tmpl = replace_all(tmpl, "Some", "A");
      tmpl = replace_all(tmpl, "are all", "is");
      tmpl = replace_all(tmpl, "are", "is");
      tmpl = replace_all(tmpl, "answers", "answer");
      type_v.pop_back();
    }
    return Built{format(tmpl, {{"type_needle_v", type_v}, {"context", context}, {"query", query}}), answers};
  };
}

// Variable tracking: chains "VAR A = 12345", "VAR B = VAR A", ... hidden among noise sentences.
Built vt_build(int64_t n, uint64_t seed, int64_t hops, int64_t chains, int64_t letters) {
  Rng content(seed), place(seed ^ 0x9E3779B97F4A7C15ull);
  std::set<std::string> seen;
  std::vector<std::vector<std::string>> vars(chains), statements(chains);
  for (int64_t c = 0; c < chains; ++c) {
    while (static_cast<int64_t>(vars[c].size()) < hops + 1) {
      std::string v;
      for (int64_t i = 0; i < letters; ++i) v += static_cast<char>('A' + below(content, 26));
      if (seen.insert(v).second) vars[c].push_back(v);
    }
    statements[c].push_back("VAR " + vars[c][0] + " = " + std::to_string(10000 + below(content, 90000)));
    for (int64_t h = 0; h < hops; ++h) statements[c].push_back("VAR " + vars[c][h + 1] + " = VAR " + vars[c][h] + " ");
  }
  std::vector<std::string> sentences(static_cast<size_t>(n), std::string(noise_sentence) + "\n");
  for (const auto& chain : statements) {
    const int64_t len = static_cast<int64_t>(sentences.size()), k = static_cast<int64_t>(chain.size());
    std::vector<int64_t> at = len >= k ? sample_indices(place, len, k) : std::vector<int64_t>(k, 0);
    std::sort(at.begin(), at.end());
    for (int64_t j = 0; j < k; ++j) sentences.insert(sentences.begin() + at[j] + j, chain[j]);
  }
  const std::string context = replace_all(join(sentences, " "), ". \n", ".\n");
  const std::string value = statements[0][0].substr(statements[0][0].rfind('=') + 2);
  return {format(vt_template, {{"context", context}, {"query", value}, {"num_v", std::to_string(hops + 1)}}), vars[0]};
}

// Common words: num_cw words `freq` times each among the others `ufreq` times, as a numbered list.
std::pair<std::string, std::vector<std::string>> cwe_list(Rng& rng, const std::vector<std::string>& words,
                                                          int64_t n, int64_t freq, int64_t ufreq, int64_t num_cw) {
  std::vector<std::string> chosen;
  for (int64_t i : sample_indices(rng, static_cast<int64_t>(words.size()), n)) chosen.push_back(words[i]);
  std::vector<std::string> common(chosen.begin(), chosen.begin() + num_cw), list;
  for (int64_t r = 0; r < freq; ++r) list.insert(list.end(), common.begin(), common.end());
  for (int64_t r = 0; r < ufreq; ++r) list.insert(list.end(), chosen.begin() + num_cw, chosen.end());
  shuffle(rng, list);
  std::vector<std::string> numbered;
  for (size_t i = 0; i < list.size(); ++i) numbered.push_back(std::to_string(i + 1) + ". " + list[i]);
  return {join(numbered, " "), common};
}

double zeta(double alpha) {  // Riemann zeta for alpha > 1: partial sum plus the integral tail
  double s = 0;
  constexpr int n = 100000;
  for (int k = 1; k <= n; ++k) s += std::pow(k, -alpha);
  return s + std::pow(n + 0.5, 1 - alpha) / (alpha - 1);
}

// A task's prompt builder and the haystack sizes it may take.
struct Haystack {
  Builder build;
  int64_t lo = 1, cap = int64_t{1} << 40;  // haystack size bounds
  std::string type;                         // RulerSample::haystack_type
};

// Variable tracking. RULER prepends one solved example of about 500 tokens (3-letter variables); at
// short lengths its budget shrinks to a quarter of the length, and it is left out when even that
// cannot hold it.
Haystack vt_haystack(const RulerTask& task, const io::Tokenizer& tokenizer, int64_t length, uint64_t seed) {
  const int64_t budget = std::min<int64_t>(500, length / 4);
  const auto icl = [&](int64_t n) { return vt_build(n, seed + 1, std::min<int64_t>(10, task.num_hops), task.num_chains, 3); };
  const auto icl_tokens = [&](int64_t n) {
    const Built b = icl(n);
    return static_cast<int64_t>(tokenizer.encode(b.prompt + " " + join(b.answers, " "), false).size()) +
           task.max_new_tokens;
  };
  std::string prefix;
  if (icl_tokens(0) <= budget) {
    int64_t a = 0, b = 1;
    while (icl_tokens(b) <= budget) a = b, b *= 2;
    while (b - a > 1) {
      const int64_t m = (a + b) / 2;
      (icl_tokens(m) <= budget ? a : b) = m;
    }
    const Built ex = icl(a);
    prefix = ex.prompt + " " + join(ex.answers, " ") + "\n\n";
  }
  Haystack h;
  h.type = "noise";
  h.lo = 0;
  h.build = [&task, seed, prefix](int64_t n) {
    Built b = vt_build(n, seed, task.num_hops, task.num_chains, 5);
    b.prompt = prefix + b.prompt;
    return b;
  };
  return h;
}

// Common words extraction: one solved example list, then the real one.
Haystack cwe_haystack(const RulerTask& task, const RulerData& data, int64_t length, uint64_t seed) {
  const bool shorter = length < 4096;
  const int64_t example_words = shorter ? 20 : 40;
  if (static_cast<int64_t>(data.words.size()) < std::max(example_words, task.num_cw + 1))
    throw std::invalid_argument("task cwe needs at least " + std::to_string(std::max(example_words, task.num_cw + 1)) +
                                " words in the word list, it has " + std::to_string(data.words.size()));
  Haystack h;
  h.type = "words";
  h.lo = task.num_cw;
  h.cap = static_cast<int64_t>(data.words.size());
  h.build = [&task, &data, seed, shorter, example_words](int64_t n) {
    Rng rng(seed);
    const auto ex = cwe_list(rng, data.words, example_words, shorter ? 3 : 10, shorter ? 1 : 3, task.num_cw);
    const auto real = cwe_list(rng, data.words, n, shorter ? 6 : task.freq_cw, shorter ? 1 : task.freq_ucw, task.num_cw);
    std::vector<std::string> ex_answer;
    for (size_t i = 0; i < ex.second.size(); ++i) ex_answer.push_back(std::to_string(i + 1) + ". " + ex.second[i]);
    return Built{format(cwe_template, {{"context", ex.first}}) + " " + join(ex_answer, " ") + "\n" +
                     format(cwe_template, {{"context", real.first}}),
                 real.second};
  };
  return h;
}

// Frequent words extraction: random coded words with Zipf(alpha) counts.
Haystack fwe_haystack(const RulerTask& task, int64_t length, uint64_t seed) {
  const int64_t vocab_size = std::max<int64_t>(4, length / 50);
  const double z = zeta(task.alpha);
  Haystack h;
  h.type = "words";
  h.lo = 0;
  h.build = [&task, seed, vocab_size, z](int64_t n) {
    Rng rng(seed);
    std::set<std::string> unique;
    while (static_cast<int64_t>(unique.size()) < vocab_size) {
      std::string w;
      for (int i = 0; i < 6; ++i) w += static_cast<char>('a' + below(rng, 26));
      unique.insert(w);
    }
    std::vector<std::string> vocab(unique.begin(), unique.end());
    shuffle(rng, vocab);
    vocab[0] = "...";  // the most frequent "word" is noise
    std::vector<std::string> words;
    for (int64_t k = 1; k <= vocab_size; ++k) {
      const auto count = static_cast<int64_t>(static_cast<double>(n) * std::pow(k, -task.alpha) / z);
      for (int64_t c = 0; c < count; ++c) words.push_back(vocab[k - 1]);
    }
    shuffle(rng, words);
    return Built{format(fwe_template, {{"context", join(words, " ")}}), {vocab[1], vocab[2], vocab[3]}};
  };
  return h;
}

// `n` documents for `item`: its gold ones, then related ones, then others of the set, shuffled.
std::vector<int64_t> qa_documents(const QaSet& set, const QaItem& item, int64_t n, uint64_t seed) {
  Rng rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<int64_t> docs = item.gold_docs;
  const int64_t total = static_cast<int64_t>(set.docs.size());
  const int64_t extra = std::max<int64_t>(0, std::min(n, total) - static_cast<int64_t>(docs.size()));
  if (extra <= static_cast<int64_t>(item.related_docs.size())) {
    for (int64_t i : sample_indices(rng, static_cast<int64_t>(item.related_docs.size()), extra))
      docs.push_back(item.related_docs[i]);
  } else {
    docs.insert(docs.end(), item.related_docs.begin(), item.related_docs.end());
    std::set<int64_t> used(docs.begin(), docs.end());
    std::vector<int64_t> others;
    for (int64_t d = 0; d < total; ++d)
      if (!used.count(d)) others.push_back(d);
    for (int64_t i : sample_indices(rng, static_cast<int64_t>(others.size()), extra - static_cast<int64_t>(item.related_docs.size())))
      docs.push_back(others[i]);
  }
  shuffle(rng, docs);
  return docs;
}

// Question answering: one question of the task's set over a haystack of documents.
Haystack qa_haystack(const RulerTask& task, const RulerData& data, uint64_t seed) {
  const std::optional<QaSet>& chosen = task.dataset == "squad" ? data.squad : data.hotpot;
  if (!chosen)
    throw std::invalid_argument("task " + task.name + " needs the " + task.dataset + " JSON file (--" +
                                (task.dataset == "squad" ? "squad" : "hotpotqa") + ")");
  const QaSet* set = &*chosen;
  Rng pick(seed);
  const QaItem* item = &set->items[below(pick, set->items.size())];
  Haystack h;
  h.type = "documents";
  h.lo = static_cast<int64_t>(item->gold_docs.size());
  h.cap = static_cast<int64_t>(set->docs.size());
  h.build = [item, set, seed](int64_t n) {
    const std::vector<int64_t> docs = qa_documents(*set, *item, n, seed);
    std::vector<std::string> parts;
    for (size_t i = 0; i < docs.size(); ++i)
      parts.push_back("Document " + std::to_string(i + 1) + ":\n" + set->docs[docs[i]]);
    return Built{format(qa_template, {{"context", join(parts, "\n\n")}, {"query", item->question}}), item->answers};
  };
  return h;
}

Haystack haystack_make(const RulerTask& task, const RulerData& data, const io::Tokenizer& tokenizer, int64_t length,
                       uint64_t seed) {
  switch (task.kind) {
    case RulerKind::ruler_kind_niah: {
      Haystack h;
      h.build = niah_builder(task, data, seed, h.type);
      h.lo = 0;
      return h;
    }
    case RulerKind::ruler_kind_vt:
      return vt_haystack(task, tokenizer, length, seed);
    case RulerKind::ruler_kind_cwe:
      return cwe_haystack(task, data, length, seed);
    case RulerKind::ruler_kind_fwe:
      return fwe_haystack(task, length, seed);
    case RulerKind::ruler_kind_qa:
      return qa_haystack(task, data, seed);
  }
  throw std::logic_error("unknown RULER task kind");
}

// The largest haystack size in [lo, cap] whose prompt, with the tokens to generate, fits `length`
// tokens: grown from a linear estimate, then bisected. Throws when even the smallest does not fit,
// or when a finite haystack (cwe's word list, the QA documents) runs out well before the budget,
// which would give a shorter prompt than the length it is reported under.
int64_t haystack_fit(const RulerTask& task, const Haystack& haystack, const std::function<int64_t(int64_t)>& tokens,
                     int64_t length) {
  const int64_t budget = length - task.max_new_tokens;
  const int64_t smallest = tokens(haystack.lo);
  if (smallest > budget)
    throw std::invalid_argument("RULER task " + task.name + ": length " + std::to_string(length) +
                                " is too short: the prompt with the smallest haystack has " + std::to_string(smallest) +
                                " tokens, plus " + std::to_string(task.max_new_tokens) + " to generate");
  const int64_t cap = haystack.cap;
  int64_t good = haystack.lo, bad = -1;
  int64_t step = 16;
  while (bad < 0) {
    const int64_t probe = std::min(cap, good + step);
    if (probe == good) break;
    if (tokens(probe) <= budget) {
      good = probe;
      step *= 2;
    } else {
      bad = probe;
    }
  }
  while (bad >= 0 && bad - good > 1) {
    const int64_t m = good + (bad - good) / 2;
    (tokens(m) <= budget ? good : bad) = m;
  }
  if (good == cap && bad < 0 && tokens(good) < budget - budget / 10)
    throw std::invalid_argument("RULER task " + task.name + ": length " + std::to_string(length) + ": the " +
                                haystack.type + " haystack runs out at " + std::to_string(cap) + " units (" +
                                std::to_string(tokens(good)) + " of " + std::to_string(budget) +
                                " tokens); give a larger word list / QA file or a shorter length");
  return good;
}

}  // namespace

const std::vector<RulerTask>& ruler_tasks() {
  static const std::vector<RulerTask> tasks = [] {
    std::vector<RulerTask> t;
    const auto niah = [&](const char* name, const char* hay, const char* k, const char* v, int64_t nk,
                          int64_t nv, int64_t nq) {
      RulerTask r;
      r.name = name;
      r.kind = RulerKind::ruler_kind_niah;
      r.max_new_tokens = 128;
      r.haystack = hay;
      r.key_type = k;
      r.value_type = v;
      r.num_keys = nk;
      r.num_values = nv;
      r.num_queries = nq;
      t.push_back(r);
    };
    niah("niah_single_1", "noise", "words", "numbers", 1, 1, 1);
    niah("niah_single_2", "essay", "words", "numbers", 1, 1, 1);
    niah("niah_single_3", "essay", "words", "uuids", 1, 1, 1);
    niah("niah_multikey_1", "essay", "words", "numbers", 4, 1, 1);
    niah("niah_multikey_2", "needle", "words", "numbers", 1, 1, 1);
    niah("niah_multikey_3", "needle", "uuids", "uuids", 1, 1, 1);
    niah("niah_multivalue", "essay", "words", "numbers", 1, 4, 1);
    niah("niah_multiquery", "essay", "words", "numbers", 1, 1, 4);
    RulerTask vt;
    vt.name = "vt";
    vt.kind = RulerKind::ruler_kind_vt;
    vt.max_new_tokens = 30;
    t.push_back(vt);
    RulerTask cwe;
    cwe.name = "cwe";
    cwe.kind = RulerKind::ruler_kind_cwe;
    cwe.max_new_tokens = 120;
    t.push_back(cwe);
    RulerTask fwe;
    fwe.name = "fwe";
    fwe.kind = RulerKind::ruler_kind_fwe;
    fwe.max_new_tokens = 50;
    t.push_back(fwe);
    for (const auto& [name, dataset] : {std::pair{"qa_1", "squad"}, std::pair{"qa_2", "hotpotqa"}}) {
      RulerTask qa;
      qa.name = name;
      qa.kind = RulerKind::ruler_kind_qa;
      qa.max_new_tokens = 32;
      qa.match_part = true;
      qa.dataset = dataset;
      t.push_back(qa);
    }
    return t;
  }();
  return tasks;
}

const RulerTask& ruler_task_find(const std::string& name) {
  std::string known;
  for (const auto& t : ruler_tasks()) {
    if (t.name == name) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  throw std::invalid_argument("unknown RULER task '" + name + "' (known: " + known + ")");
}

RulerSample ruler_sample_make(const RulerTask& task, const RulerData& data, const io::Tokenizer& tokenizer,
                              int64_t length, uint64_t seed) {
  const Haystack haystack = haystack_make(task, data, tokenizer, length, seed);
  const auto tokens = [&](int64_t n) {
    return static_cast<int64_t>(tokenizer.encode(haystack.build(n).prompt, true).size());
  };
  const int64_t size = haystack_fit(task, haystack, tokens, length);
  const Built b = haystack.build(size);
  RulerSample sample;
  sample.prompt = b.prompt;
  sample.answers = b.answers;
  sample.tokens = tokens(size);
  sample.haystack = size;
  sample.haystack_type = haystack.type;
  return sample;
}

std::string ruler_prediction_clean(const std::string& prediction) {
  const auto strip = [](const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\n\r\v\f");
    if (b == std::string::npos) return std::string();
    return s.substr(b, s.find_last_not_of(" \t\n\r\v\f") - b + 1);
  };
  std::string s = strip(prediction);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = '\n';
  return strip(s);
}

}  // namespace linear_ard::eval

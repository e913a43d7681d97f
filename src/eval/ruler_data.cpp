// Reading RULER's source material: QA sets, word lists, essay haystacks.
#include "linear_ard/eval/ruler_data.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "linear_ard/io/text_dataset.h"  // defines: text_documents_read

namespace linear_ard::eval {

namespace {

nlohmann::json json_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(path + ": not valid JSON (" + e.what() + ")");
  }
}

// Field `key` of object `j` at `where` (a JSON-path-like text), of the kind `check` accepts.
template <class Check>
const nlohmann::json& field(const nlohmann::json& j, const std::string& key, const std::string& where,
                            const std::string& kind, Check check) {
  if (!j.is_object()) throw std::invalid_argument(where + ": expected an object");
  if (!j.contains(key) || !check(j[key]))
    throw std::invalid_argument(where + ": missing " + kind + " field \"" + key + "\"");
  return j[key];
}

bool is_string(const nlohmann::json& v) { return v.is_string(); }
bool is_array(const nlohmann::json& v) { return v.is_array(); }

// Sorts and dedupes the raw documents (RULER's order) and maps item documents onto the result.
void qa_set_index(QaSet& set, const std::vector<std::string>& raw,
                  std::vector<std::vector<int64_t>>& gold_raw, std::vector<std::vector<int64_t>>& related_raw) {
  std::vector<std::string> docs = raw;
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  std::map<std::string, int64_t> index;
  for (size_t i = 0; i < docs.size(); ++i) index[docs[i]] = static_cast<int64_t>(i);
  const auto remap = [&](const std::vector<int64_t>& ids, const std::set<int64_t>& skip) {
    std::vector<int64_t> out;
    for (int64_t r : ids) {
      const int64_t d = index.at(raw[r]);
      if (!skip.count(d) && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    return out;
  };
  for (size_t i = 0; i < set.items.size(); ++i) {
    set.items[i].gold_docs = remap(gold_raw[i], {});
    set.items[i].related_docs =
        remap(related_raw[i], std::set<int64_t>(set.items[i].gold_docs.begin(), set.items[i].gold_docs.end()));
  }
  set.docs = std::move(docs);
}

}  // namespace

QaSet qa_squad_read(const std::string& path) {
  const nlohmann::json root = json_read(path);
  QaSet set;
  set.path = path;
  std::vector<std::string> raw;
  std::vector<std::vector<int64_t>> gold, related;
  const auto& data = field(root, "data", path, "list", is_array);
  for (size_t a = 0; a < data.size(); ++a) {
    const std::string wa = path + ": data[" + std::to_string(a) + "]";
    const auto& paragraphs = field(data[a], "paragraphs", wa, "list", is_array);
    std::vector<int64_t> article;
    for (size_t p = 0; p < paragraphs.size(); ++p)
      article.push_back(static_cast<int64_t>(raw.size() + p));
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string wp = wa + ".paragraphs[" + std::to_string(p) + "]";
      raw.push_back(field(paragraphs[p], "context", wp, "string", is_string).get<std::string>());
    }
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string wp = wa + ".paragraphs[" + std::to_string(p) + "]";
      const auto& qas = field(paragraphs[p], "qas", wp, "list", is_array);
      for (size_t q = 0; q < qas.size(); ++q) {
        const std::string wq = wp + ".qas[" + std::to_string(q) + "]";
        if (qas[q].is_object() && qas[q].value("is_impossible", false)) continue;
        QaItem item;
        item.question = field(qas[q], "question", wq, "string", is_string).get<std::string>();
        const auto& answers = field(qas[q], "answers", wq, "list", is_array);
        for (size_t k = 0; k < answers.size(); ++k)
          item.answers.push_back(
              field(answers[k], "text", wq + ".answers[" + std::to_string(k) + "]", "string", is_string)
                  .get<std::string>());
        if (item.answers.empty()) throw std::invalid_argument(wq + ": an answerable question with no answers");
        set.items.push_back(std::move(item));
        gold.push_back({article[p]});
        related.push_back(article);
      }
    }
  }
  if (set.items.empty()) throw std::invalid_argument(path + ": no answerable question");
  qa_set_index(set, raw, gold, related);
  return set;
}

QaSet qa_hotpot_read(const std::string& path) {
  const nlohmann::json root = json_read(path);
  if (!root.is_array()) throw std::invalid_argument(path + ": expected a list of questions");
  QaSet set;
  set.path = path;
  std::vector<std::string> raw;
  std::vector<std::vector<int64_t>> gold, related;
  for (size_t i = 0; i < root.size(); ++i) {
    const std::string w = path + ": [" + std::to_string(i) + "]";
    QaItem item;
    item.question = field(root[i], "question", w, "string", is_string).get<std::string>();
    item.answers = {field(root[i], "answer", w, "string", is_string).get<std::string>()};
    const auto& context = field(root[i], "context", w, "list", is_array);
    std::vector<int64_t> docs;
    for (size_t c = 0; c < context.size(); ++c) {
      const std::string wc = w + ".context[" + std::to_string(c) + "]";
      const auto& entry = context[c];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_array())
        throw std::invalid_argument(wc + ": expected [title, [sentence, ...]]");
      std::string doc = entry[0].get<std::string>() + "\n";
      for (const auto& s : entry[1]) {
        if (!s.is_string()) throw std::invalid_argument(wc + ": sentences must be strings");
        doc += s.get<std::string>();
      }
      docs.push_back(static_cast<int64_t>(raw.size()));
      raw.push_back(std::move(doc));
    }
    set.items.push_back(std::move(item));
    gold.push_back(docs);
    related.push_back({});
  }
  if (set.items.empty()) throw std::invalid_argument(path + ": no question");
  qa_set_index(set, raw, gold, related);
  return set;
}

std::vector<std::string> word_list_read(const std::string& path, int64_t min_words) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open word list " + path);
  std::vector<std::string> words;
  std::set<std::string> seen;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    const std::string w = line.substr(b, e - b + 1);
    if (w.find_first_of(" \t") != std::string::npos)
      throw std::invalid_argument(path + ":" + std::to_string(number) + ": one word per line, got '" + w + "'");
    if (seen.insert(w).second) words.push_back(w);
  }
  if (static_cast<int64_t>(words.size()) < min_words)
    throw std::invalid_argument(path + ": " + std::to_string(words.size()) + " distinct words, at least " +
                                std::to_string(min_words) + " needed");
  return words;
}

std::vector<std::string> word_list_from_tokenizer(const io::Tokenizer& tokenizer) {
  // Word-start markers: byte-level BPE's "Ġ" (a space byte) and SentencePiece's "▁".
  static const std::string markers[] = {"\xC4\xA0", "\xE2\x96\x81"};
  std::set<std::string> words;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::string token = tokenizer.id_to_token(id);
    for (const auto& m : markers) {
      if (token.compare(0, m.size(), m) != 0) continue;
      const std::string w = token.substr(m.size());
      if (w.size() >= 3 && w.size() <= 12 &&
          std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
        words.insert(w);
    }
  }
  return {words.begin(), words.end()};
}

std::vector<std::string> essay_words_read(const std::string& path) {
  const auto docs = io::text_documents_read({path});
  std::vector<std::string> words;
  for (const auto& d : docs) {
    size_t i = 0;
    while (i < d.size()) {
      const size_t b = d.find_first_not_of(" \t\r\n\v\f", i);
      if (b == std::string::npos) break;
      const size_t e = d.find_first_of(" \t\r\n\v\f", b);
      words.push_back(d.substr(b, e == std::string::npos ? std::string::npos : e - b));
      i = e == std::string::npos ? d.size() : e;
    }
  }
  if (words.empty()) throw std::invalid_argument("haystack file " + path + " has no words");
  return words;
}

RulerData ruler_data_read(const std::string& haystack, const std::string& words, const std::string& squad,
                          const std::string& hotpot) {
  RulerData data;
  if (!haystack.empty()) data.essay_words = essay_words_read(haystack);
  if (!words.empty()) data.words = word_list_read(words, 2);
  if (!squad.empty()) data.squad = qa_squad_read(squad);
  if (!hotpot.empty()) data.hotpot = qa_hotpot_read(hotpot);
  return data;
}

void ruler_data_words_default(RulerData& data, const io::Tokenizer& tokenizer) {
  if (data.words.empty()) data.words = word_list_from_tokenizer(tokenizer);
}

}  // namespace linear_ard::eval

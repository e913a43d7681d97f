// The material RULER's synthetic tasks are built from: an essay haystack, a word list, and the
// SQuAD / HotpotQA question sets of the QA tasks, each read and validated with errors naming the
// file and the place in it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "linear_ard/io/tokenizer.h"

namespace linear_ard::eval {

struct QaItem {
  std::string question;
  std::vector<std::string> answers;   // any one found in the output scores (string_match_part)
  std::vector<int64_t> gold_docs;     // documents holding the answer (indices into QaSet::docs)
  std::vector<int64_t> related_docs;  // SQuAD: other paragraphs of the same article, used first as distractors
};

struct QaSet {
  std::string path;
  std::vector<std::string> docs;  // sorted, unique (RULER's order)
  std::vector<QaItem> items;
};

// SQuAD v2 JSON ({"data": [{"paragraphs": [{"context", "qas": [{"question", "answers": [{"text"}],
// "is_impossible"}]}]}]}); unanswerable questions are skipped. Throws std::invalid_argument
// "path: data[i].paragraphs[j]...: problem" for a missing or mistyped field.
QaSet qa_squad_read(const std::string& path);
// HotpotQA JSON (a list of {"question", "answer", "context": [[title, [sentence, ...]], ...]});
// a document is "title\n" + its sentences joined. Errors as for qa_squad_read ("path: [i].context...").
QaSet qa_hotpot_read(const std::string& path);

// One word per non-blank line (surrounding whitespace dropped), unique, in file order. Throws
// std::invalid_argument "path:line: problem" for a line with inner whitespace, and for fewer than
// `min_words` words.
std::vector<std::string> word_list_read(const std::string& path, int64_t min_words);

// Words the tokenizer holds as one token after a space or word-start marker: ASCII letters only,
// 3 to 12 of them, lower case, sorted. The default word list when no --words file is given (RULER
// uses wonderwords' noun/adjective/verb lists, which are not bundled here).
std::vector<std::string> word_list_from_tokenizer(const io::Tokenizer& tokenizer);

// Whitespace-separated words of an essay file (RULER's `re.sub(r'\s+', ' ', essay).split(' ')`).
// Throws std::invalid_argument naming the file when it has none.
std::vector<std::string> essay_words_read(const std::string& path);

struct RulerData {
  std::vector<std::string> essay_words;  // empty: essay tasks use the noise haystack
  std::vector<std::string> words;        // niah word keys and cwe words
  std::optional<QaSet> squad, hotpot;    // qa_1, qa_2
};

// Reads the files given (an empty path: not given): --haystack essay, --words list, --squad and
// --hotpotqa sets. `words` stays empty without a word list: see ruler_data_words_default.
RulerData ruler_data_read(const std::string& haystack, const std::string& words, const std::string& squad,
                          const std::string& hotpot);
// Fills an empty word list with word_list_from_tokenizer(tokenizer).
void ruler_data_words_default(RulerData& data, const io::Tokenizer& tokenizer);

}  // namespace linear_ard::eval

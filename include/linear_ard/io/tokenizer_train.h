// tokenizer_train: trains a SentencePiece BPE tokenizer on text/JSONL files (libsentencepiece_train)
// and writes it as a HuggingFace tokenizer folder that transformers and tokenizer_load both read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace linear_ard::io {

struct TokenizerTrainOptions {
  std::vector<std::string> files;   // text data files (text_dataset.h: plain text, JSON Lines, JSON arrays)
  std::string field = "text";       // the key of the text in JSON records
  int32_t vocab_size = 4096;        // pieces, the 3 specials and 256 byte-fallback pieces included
  int64_t max_sentences = 2000000;  // lines sampled for training (SentencePiece's input_sentence_size); 0: all
  int32_t threads = 0;              // 0: the hardware's
  uint32_t seed = 0;                // SentencePiece's sampling seed
  double character_coverage = 0.9995;  // rarer characters are left to byte fallback
  bool overwrite = false;           // replace an existing non-empty output folder
};

struct TokenizerTrainResult {
  int32_t vocab_size = 0;   // what training reached (at most options.vocab_size)
  int64_t lines = 0;        // non-empty lines offered to the trainer
  double seconds = 0;
};

// Trains a BPE model (identity normalisation, whitespace kept as is, a "▁" prefix, digits split,
// byte fallback; ids 0 <unk>, 1 <s>, 2 </s>) on every non-empty line of the documents of
// `options.files`, and writes into `output` (built in `<output>.tmp.<pid>`, then renamed):
// tokenizer.model (SentencePiece), tokenizer.json (the same model as HF tokenizers' BPE, see
// sentencepiece_bpe_to_tokenizer_json) and tokenizer_config.json (PreTrainedTokenizerFast, <s> added
// as BOS). Throws std::invalid_argument naming a data file that cannot be read (text_dataset.h's
// errors: file, line, field) or a bad option, and
// std::runtime_error with SentencePiece's message when training fails.
TokenizerTrainResult tokenizer_train(const TokenizerTrainOptions& options, const std::string& output);

// The tokenizer.json of a SentencePiece BPE model (what transformers' converter produces for one,
// in the file-as-written form): vocabulary and merges (every split of a piece into two vocabulary
// pieces, ranked by the merged piece's score), normalizer Prepend("▁") + Replace(" ", "▁") (as
// SentencePiece's add_dummy_prefix and whitespace escaping), byte_fallback, TemplateProcessing
// "<s> $A", and the matching decoder. Gives SentencePiece's ids (tested against it and transformers).
nlohmann::json sentencepiece_bpe_to_tokenizer_json(const std::string& model_path);

}  // namespace linear_ard::io

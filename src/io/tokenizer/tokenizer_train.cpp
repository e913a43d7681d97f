// tokenizer_train: SentencePiece BPE training on text/JSONL lines, written as an HF tokenizer folder.
#include "linear_ard/io/tokenizer_train.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "linear_ard/io/text_dataset.h"  // defines: TextReader, TextSource, text_source_check

namespace linear_ard::io {
namespace {

namespace fs = std::filesystem;

// Every non-empty line of every document, file after file: SentencePiece trains on lines.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  LineIterator(const std::vector<std::string>& files, const std::string& field) : files_(files), field_(field) {
    Next();
  }
  bool done() const override { return done_; }
  void Next() override {
    while (true) {
      // The rest of the current document first.
      while (pos_ < doc_.size()) {
        size_t end = doc_.find('\n', pos_);
        if (end == std::string::npos) end = doc_.size();
        value_ = doc_.substr(pos_, end - pos_);
        pos_ = end + 1;
        if (value_.find_first_not_of(" \t\r") != std::string::npos) {
          ++lines_;
          return;
        }
      }
      if (!document_next()) {
        done_ = true;
        return;
      }
    }
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }
  int64_t lines() const { return lines_; }

 private:
  // Loads the next document (a plain-text file in pieces) into doc_.
  bool document_next() {
    TextPiece piece;
    while (true) {
      if (!reader_) {
        if (file_ >= files_.size()) return false;
        reader_.emplace(TextSource{files_[file_], field_}, kChunkBytes);
      }
      if (reader_->next(piece)) {
        doc_ = std::move(piece.text);
        pos_ = 0;
        return true;
      }
      reader_.reset();
      ++file_;
    }
  }

  static constexpr size_t kChunkBytes = 1 << 16;
  const std::vector<std::string>& files_;
  const std::string& field_;
  size_t file_ = 0;
  std::optional<TextReader> reader_;
  std::string doc_, value_;
  size_t pos_ = 0;
  bool done_ = false;
  int64_t lines_ = 0;
};

void file_write(const fs::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  if (!out.flush()) throw std::runtime_error("tokenizer-train: cannot write " + path.string());
}

// SentencePiece's failure, rephrased where it is the user's to fix: a vocabulary smaller than its
// special and byte pieces plus the characters that cover character_coverage of this text (a
// number only SentencePiece's own count of the sampled text gives: "... required_chars. 300 vs 345").
std::string train_failure_text(const std::string& status, const TokenizerTrainOptions& o) {
  static const std::regex required(R"(Vocabulary size is smaller than required_chars\. (\d+) vs (\d+))");
  std::smatch m;
  if (!std::regex_search(status, m, required)) return "tokenizer-train: SentencePiece training failed: " + status;
  constexpr int kMetaPieces = 3 + 256;  // unk, bos, eos and the byte-fallback pieces
  const std::string need = m[2].str();
  char coverage[32];
  std::snprintf(coverage, sizeof coverage, "%g", o.character_coverage);
  return "tokenizer-train: --vocab-size " + std::to_string(o.vocab_size) + " is below what this text needs: " + need +
         " pieces (" + std::to_string(kMetaPieces) + " special and byte pieces, " +
         std::to_string(std::stoll(need) - kMetaPieces) + " characters covering --character-coverage " + coverage +
         " of it); give --vocab-size " + need + " or more, or a smaller --character-coverage";
}

}  // namespace

TokenizerTrainResult tokenizer_train(const TokenizerTrainOptions& o, const std::string& output) {
  if (o.files.empty()) throw std::invalid_argument("tokenizer-train: no data files given");
  // 3 specials + 256 byte pieces come first; BPE needs room for characters and merges beyond them.
  if (o.vocab_size < 300) throw std::invalid_argument("tokenizer-train: vocab_size must be >= 300, got " + std::to_string(o.vocab_size));
  if (o.max_sentences < 0) throw std::invalid_argument("tokenizer-train: max_sentences must be >= 0");
  if (o.character_coverage <= 0 || o.character_coverage > 1)
    throw std::invalid_argument("tokenizer-train: character_coverage must be in (0, 1]");
  const fs::path out(output);
  if (fs::exists(out) && (!fs::is_directory(out) || !fs::is_empty(out)) && !o.overwrite)
    throw std::invalid_argument("tokenizer-train: output " + output + " exists and is not empty (use --overwrite)");
  // Every file read through before training, so that a bad one fails here, not inside SentencePiece.
  for (const auto& f : o.files) text_source_check({f, o.field});

  const auto start = std::chrono::steady_clock::now();
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::unordered_map<std::string, std::string> spec = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(o.vocab_size)},
      // Small corpora may not reach vocab_size; training then stops where merges run out.
      {"hard_vocab_limit", "false"},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", "65536"},
      {"num_threads", std::to_string(threads)},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"split_digits", "true"},
      {"byte_fallback", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"minloglevel", "1"},
  };
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  LineIterator lines(o.files, o.field);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(spec, &lines, &model);
  if (!status.ok()) throw std::runtime_error(train_failure_text(status.ToString(), o));

  const fs::path tmp = output + ".tmp." + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  file_write(tmp / "tokenizer.model", model);
  sentencepiece::SentencePieceProcessor sp;
  if (!sp.LoadFromSerializedProto(model).ok()) throw std::runtime_error("tokenizer-train: trained model does not load");
  file_write(tmp / "tokenizer.json", sentencepiece_bpe_to_tokenizer_json((tmp / "tokenizer.model").string()).dump(2));
  // PreTrainedTokenizerFast runs tokenizer.json as written (LlamaTokenizer would rebuild it).
  const nlohmann::json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                 {"bos_token", sp.IdToPiece(sp.bos_id())},
                                 {"eos_token", sp.IdToPiece(sp.eos_id())},
                                 {"unk_token", sp.IdToPiece(sp.unk_id())},
                                 {"clean_up_tokenization_spaces", false}};
  file_write(tmp / "tokenizer_config.json", config.dump(2) + "\n");
  if (fs::exists(out)) fs::remove_all(out);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::rename(tmp, out);

  TokenizerTrainResult r;
  r.vocab_size = sp.GetPieceSize();
  r.lines = lines.lines();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace linear_ard::io

// TokenStream: the token ids of a run's data files in order, pass after pass: text streamed through
// a tokenizer, or pre-tokenised .npy id files (paper Appendix B: the pipeline streams text and
// slices it into fixed-length blocks). The validation split is held out at the start of the data,
// and the stages cut their blocks from one stream, each where the previous one stopped.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "linear_ard/io/text_dataset.h"  // defines: TextReader, TextSource
#include "linear_ard/io/tokenizer.h"

namespace linear_ard::train {

// Files ending in .npy are pre-tokenised: one 1-D little-endian uint16 or uint32 array (numpy's
// `np.save(path, ids.astype(np.uint32))`) of ids taken as they are (no BOS/EOS added; documents
// delimited by the user), every id checked against vocab_size; every other file is text, read by
// io::TextReader (JSON Lines, JSON arrays, plain text in paragraph-aligned chunks). Each document is
// encoded with the tokenizer's special tokens (BOS) and ends with EOS when the tokenizer has one;
// documents are concatenated. A pass is one reading of every file in order.
class TokenStream {
 public:
  // Every text file of `files` read through (io::text_source_check): throws std::invalid_argument
  // naming file, line and field for an empty or malformed one. Costs one reading of the text, no
  // tokenization; called once before the streams of a run are built.
  static void files_check(const std::vector<io::TextSource>& files);

  // Throws std::invalid_argument naming a file that cannot be read. `key` names the files in
  // errors ("data", "val_data", "stage2.data").
  TokenStream(std::vector<io::TextSource> files, const io::Tokenizer& tokenizer, int64_t vocab_size, std::string key);

  // The first `count` blocks of `len` tokens of the data, kept apart: every pass starts after
  // them, so they are never trained on. Once, before the first block_next. Throws
  // std::invalid_argument when one pass holds fewer tokens, naming `what` (the keys that asked).
  std::vector<std::vector<int32_t>> hold_out(int64_t count, int64_t len, const std::string& what);
  // Throws std::invalid_argument naming `what` unless one pass holds a block of `len` tokens after
  // the held-out ones (else block_next could never cut one). Before the first block_next; reads
  // ahead no further than that (the tokens stay buffered for the blocks).
  void block_fits(int64_t len, const std::string& what);

  // A block of the stream and where its first token lies in its pass (the held-out tokens counted).
  struct Block {
    std::vector<int32_t> ids;
    int64_t offset = 0;
  };
  // The next `len` tokens of the pass; when the pass has fewer left, those are dropped and a new
  // pass begins (after the held-out tokens). block_fits(len) must have passed.
  Block block_next(int64_t len);

  // Completed passes (a new pass began after each).
  int64_t passes() const { return passes_; }
  const std::vector<io::TextSource>& files() const { return files_; }

 private:
  // Opens files_[file_index_]: a TextReader, or for .npy the stream with its header checked.
  void file_open();
  void file_close();
  // Appends the next chunk of ids of a .npy file to buffer_; false at its end.
  bool read_npy_chunk();
  // Appends the next document (or plain-text chunk) of the pass to buffer_; false at its end.
  bool read_document();
  // Reads until buffer_ holds `count` tokens; false when the pass ends first.
  bool buffer_fill(int64_t count);
  // Takes the first `count` tokens of buffer_ (which holds them) as the pass's next ones.
  std::vector<int32_t> buffer_take(int64_t count);
  // Starts a pass: first file, empty buffer, the held-out tokens skipped.
  void pass_begin();

  std::vector<io::TextSource> files_;
  const io::Tokenizer& tokenizer_;
  int64_t vocab_size_;
  std::string key_;
  int64_t held_out_tokens_ = 0;
  std::vector<int32_t> buffer_;
  int64_t offset_ = 0;  // of buffer_'s first token in the pass
  size_t file_index_ = 0;
  bool file_open_ = false;
  std::optional<io::TextReader> text_;  // the open text file
  std::ifstream in_;                    // the open .npy file
  int npy_width_ = 0;         // bytes per id: 2 or 4
  int64_t npy_remaining_ = 0; // ids left in the open .npy file
  int64_t npy_read_ = 0;      // ids read from it (error positions)
  int64_t passes_ = 0;
};

}  // namespace linear_ard::train

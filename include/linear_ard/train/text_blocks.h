// TextBlocks: text files streamed through a tokenizer, or pre-tokenised .npy id files, sliced into
// fixed blocks of ctx_len tokens (paper Appendix B: every block holds exactly ctx_len real tokens).
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
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
// documents are concatenated and cut into blocks, the tail of a pass shorter than a block is dropped.
// The first `held_out` blocks of each pass are kept apart for evaluation and never trained on.
class TextBlocks {
 public:
  // Every text file of `files` read through (io::text_source_check): throws std::invalid_argument
  // naming file, line and field for an empty or malformed one. Costs one reading of the text, no
  // tokenization; called once before the blocks of a run are built.
  static void files_check(const std::vector<io::TextSource>& files);

  // Reads up to the held-out blocks and the first training block; throws std::invalid_argument
  // naming the file (and line and field: io::TextReader's errors) when one cannot be read or is
  // malformed where it is read, and when one pass over the data gives fewer than held_out + 1
  // blocks.
  TextBlocks(std::vector<io::TextSource> files, const io::Tokenizer& tokenizer, int64_t ctx_len,
             int64_t held_out, int64_t vocab_size);

  const std::vector<std::vector<int32_t>>& held_out() const { return held_out_; }
  // The next training block; after the last one, starts a new pass over the files.
  std::vector<int32_t> next();
  // Makes next() return only blocks rank, rank + world, rank + 2·world, ... of the training stream
  // (passes included): the disjoint shard of one of `world` data-parallel ranks. The union over
  // ranks of their k-th group of blocks is the single stream's k-th group of `world` blocks.
  void shard(int64_t rank, int64_t world);
  // Makes next() draw each block of the training stream at random from a pool of the stream's next
  // `buffer` blocks (std::mt19937_64 seeded by `seed`), as a streaming shuffle buffer does, so that
  // the seed also varies the data order; 0 (the default) keeps the stream's order. The draws depend
  // only on (buffer, seed), so a resumed run that replays its blocks gets the same ones, and the
  // shuffle is of the unsharded stream, so ranks stay disjoint. Throws for buffer < 0.
  void shuffle(int64_t buffer, uint64_t seed);
  // Completed passes over the data (epochs) so far.
  int64_t passes() const { return passes_; }

 private:
  // Opens files_[file_index_]: a TextReader, or for .npy the stream with its header checked.
  void file_open();
  void file_close();
  // Appends the next chunk of ids of a .npy file to buffer_; false at its end.
  bool read_npy_chunk();
  // Appends the next document (or plain-text chunk) of the pass to buffer_; false at its end.
  bool read_document();
  // Starts a pass: first file, empty buffer, held-out blocks skipped.
  void pass_begin();
  // A block from buffer_ if it holds one, else reads on; false at the end of the pass.
  bool block_take(std::vector<int32_t>& block);
  // The next block of the whole (unsharded) training stream.
  std::vector<int32_t> stream_next();
  // The next block of that stream after the shuffle (stream_next's when there is none).
  std::vector<int32_t> shuffled_next();

  std::vector<io::TextSource> files_;
  const io::Tokenizer& tokenizer_;
  int64_t ctx_len_;
  int64_t held_out_count_;
  int64_t vocab_size_;
  std::vector<std::vector<int32_t>> held_out_;
  std::vector<int32_t> buffer_;
  size_t file_index_ = 0;
  bool file_open_ = false;
  std::optional<io::TextReader> text_;  // the open text file
  std::ifstream in_;                    // the open .npy file
  int npy_width_ = 0;         // bytes per id: 2 or 4
  int64_t npy_remaining_ = 0; // ids left in the open .npy file
  int64_t npy_read_ = 0;      // ids read from it (error positions)
  int64_t passes_ = 0;
  int64_t shard_rank_ = 0, shard_world_ = 1;
  int64_t shuffle_buffer_ = 0;
  std::mt19937_64 shuffle_rng_;
  std::vector<std::vector<int32_t>> pool_;  // the shuffle's blocks, read ahead of the draws
};

}  // namespace linear_ard::train

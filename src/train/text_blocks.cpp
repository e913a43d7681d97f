// text_blocks: streaming tokenisation of text data files into fixed ctx_len blocks.
#include "linear_ard/train/text_blocks.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace linear_ard::train {
namespace {

// Plain text is encoded in pieces of about this many bytes, cut at blank lines, so a large file
// is never held (or its ids) in memory at once.
constexpr size_t kChunkBytes = 1 << 16;

bool is_npy(const std::string& path) { return std::filesystem::path(path).extension() == ".npy"; }

}  // namespace

TextBlocks::TextBlocks(std::vector<io::TextSource> files, const io::Tokenizer& tokenizer, int64_t ctx_len,
                       int64_t held_out, int64_t vocab_size)
    : files_(std::move(files)), tokenizer_(tokenizer), ctx_len_(ctx_len), held_out_count_(held_out),
      vocab_size_(vocab_size) {
  if (files_.empty()) throw std::invalid_argument("data: no files given");
  if (ctx_len_ < 1) throw std::invalid_argument("data: ctx_len must be >= 1");
  for (const auto& f : files_) {
    if (!std::ifstream(f.path)) throw std::invalid_argument("data: cannot read file " + f.path);
  }
  pass_begin();
  std::vector<int32_t> block;
  while (static_cast<int64_t>(held_out_.size()) < held_out_count_ && block_take(block)) held_out_.push_back(block);
  // One training block must exist too; it is read now so that a too-small corpus fails up front.
  if (static_cast<int64_t>(held_out_.size()) < held_out_count_ || !block_take(block)) {
    throw std::invalid_argument("data: one pass over the files gives fewer than " +
                                std::to_string(held_out_count_ + 1) + " blocks of ctx_len=" +
                                std::to_string(ctx_len_) + " tokens (" + std::to_string(held_out_count_) +
                                " held out for evaluation, at least 1 for training); add text or lower ctx_len");
  }
  buffer_.insert(buffer_.begin(), block.begin(), block.end());
}

void TextBlocks::files_check(const std::vector<io::TextSource>& files) {
  for (const auto& f : files)
    if (!is_npy(f.path)) io::text_source_check(f);
}

void TextBlocks::pass_begin() {
  file_index_ = 0;
  file_close();
  buffer_.clear();
}

void TextBlocks::file_close() {
  in_.close();
  text_.reset();
  file_open_ = false;
}

void TextBlocks::file_open() {
  const std::string& path = files_[file_index_].path;
  file_open_ = true;
  if (!is_npy(path)) {
    text_.emplace(files_[file_index_], kChunkBytes);
    return;
  }
  in_.clear();
  in_.open(path, std::ios::binary);
  if (!in_) throw std::invalid_argument("data: cannot read file " + path);
  // numpy's format: magic, version, header length (2 bytes in v1, 4 in v2/v3), a Python dict.
  const auto bad = [&](const std::string& what) {
    throw std::invalid_argument("data: " + path + ": not a 1-D uint16/uint32 .npy token file (" + what + ")");
  };
  char magic[8];
  if (!in_.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") bad("no .npy magic");
  uint32_t header_len = 0;
  unsigned char len_bytes[4] = {0, 0, 0, 0};
  const int len_size = magic[6] == 1 ? 2 : 4;
  if (!in_.read(reinterpret_cast<char*>(len_bytes), len_size)) bad("truncated header");
  for (int i = len_size - 1; i >= 0; --i) header_len = header_len * 256 + len_bytes[i];
  std::string header(header_len, '\0');
  if (!in_.read(header.data(), header_len)) bad("truncated header");
  if (header.find("'fortran_order': False") == std::string::npos) bad("fortran_order must be False");
  if (header.find("'descr': '<u2'") != std::string::npos) npy_width_ = 2;
  else if (header.find("'descr': '<u4'") != std::string::npos) npy_width_ = 4;
  else bad("dtype must be <u2 or <u4");
  const size_t shape = header.find("'shape': (");
  if (shape == std::string::npos) bad("no shape");
  const size_t close = header.find(')', shape);
  const std::string dims = header.substr(shape + 10, close - shape - 10);
  const size_t comma = dims.find(',');
  if (comma == std::string::npos || dims.find_first_not_of(" ", comma + 1) != std::string::npos) bad("shape must be 1-D");
  npy_remaining_ = std::stoll(dims.substr(0, comma));
  npy_read_ = 0;
}

bool TextBlocks::read_npy_chunk() {
  if (npy_remaining_ == 0) return false;
  const int64_t count = std::min<int64_t>(npy_remaining_, kChunkBytes);
  std::vector<unsigned char> raw(static_cast<size_t>(count * npy_width_));
  if (!in_.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
    throw std::invalid_argument("data: " + files_[file_index_].path + ": truncated (fewer ids than its shape says)");
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* p = raw.data() + i * npy_width_;
    const uint32_t id = npy_width_ == 2 ? p[0] | (p[1] << 8)
                                        : p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    if (id >= vocab_size_)
      throw std::invalid_argument("data: " + files_[file_index_].path + ": token id " + std::to_string(id) + " at index " +
                                  std::to_string(npy_read_ + i) + " is >= the teacher's vocab_size " +
                                  std::to_string(vocab_size_) + " (tokenised with another tokenizer?)");
    buffer_.push_back(static_cast<int32_t>(id));
  }
  npy_remaining_ -= count;
  npy_read_ += count;
  return true;
}

bool TextBlocks::read_document() {
  while (file_index_ < files_.size()) {
    if (!file_open_) file_open();
    if (!text_) {
      if (read_npy_chunk()) return true;
    } else if (io::TextPiece piece; text_->next(piece)) {
      const auto ids = tokenizer_.encode(piece.text, /*add_special_tokens=*/piece.document_begins);
      buffer_.insert(buffer_.end(), ids.begin(), ids.end());
      if (piece.document_ends && tokenizer_.eos_id() >= 0 && (ids.empty() || ids.back() != tokenizer_.eos_id()))
        buffer_.push_back(tokenizer_.eos_id());
      return true;
    }
    file_close();
    ++file_index_;
  }
  return false;
}

bool TextBlocks::block_take(std::vector<int32_t>& block) {
  while (static_cast<int64_t>(buffer_.size()) < ctx_len_) {
    if (!read_document()) return false;
  }
  block.assign(buffer_.begin(), buffer_.begin() + ctx_len_);
  buffer_.erase(buffer_.begin(), buffer_.begin() + ctx_len_);
  return true;
}

void TextBlocks::shard(int64_t rank, int64_t world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("data: shard rank " + std::to_string(rank) + " of " + std::to_string(world));
  shard_rank_ = rank;
  shard_world_ = world;
}

void TextBlocks::shuffle(int64_t buffer, uint64_t seed) {
  if (buffer < 0) throw std::invalid_argument("data: shuffle buffer " + std::to_string(buffer) + " must be >= 0");
  shuffle_buffer_ = buffer;
  shuffle_rng_.seed(seed);
  pool_.clear();
}

std::vector<int32_t> TextBlocks::next() {
  for (int64_t r = 0; r < shard_rank_; ++r) shuffled_next();
  std::vector<int32_t> block = shuffled_next();
  for (int64_t r = shard_rank_ + 1; r < shard_world_; ++r) shuffled_next();
  return block;
}

std::vector<int32_t> TextBlocks::shuffled_next() {
  if (shuffle_buffer_ == 0) return stream_next();
  while (static_cast<int64_t>(pool_.size()) < shuffle_buffer_) pool_.push_back(stream_next());
  const auto j = static_cast<size_t>(shuffle_rng_() % pool_.size());
  std::swap(pool_[j], pool_.back());
  std::vector<int32_t> block = std::move(pool_.back());
  pool_.pop_back();
  return block;
}

std::vector<int32_t> TextBlocks::stream_next() {
  std::vector<int32_t> block;
  if (block_take(block)) {
    return block;
  }
  ++passes_;
  pass_begin();
  for (int64_t i = 0; i < held_out_count_; ++i) block_take(block);
  // The constructor proved that a pass holds a training block.
  block_take(block);
  return block;
}

}  // namespace linear_ard::train

// token_stream: data files to token ids, pass after pass, with the validation split held out.
#include "linear_ard/train/token_stream.h"

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

void TokenStream::files_check(const std::vector<io::TextSource>& files) {
  for (const auto& f : files)
    if (!is_npy(f.path)) io::text_source_check(f);
}

TokenStream::TokenStream(std::vector<io::TextSource> files, const io::Tokenizer& tokenizer, int64_t vocab_size,
                         std::string key)
    : files_(std::move(files)), tokenizer_(tokenizer), vocab_size_(vocab_size), key_(std::move(key)) {
  if (files_.empty()) throw std::invalid_argument(key_ + ": no files given");
  for (const auto& f : files_)
    if (!std::ifstream(f.path)) throw std::invalid_argument(key_ + ": cannot read file " + f.path);
}

std::vector<std::vector<int32_t>> TokenStream::hold_out(int64_t count, int64_t len, const std::string& what) {
  if (!buffer_fill(count * len))
    throw std::invalid_argument(key_ + ": one pass over the files gives " + std::to_string(buffer_.size()) +
                                " tokens, fewer than the " + std::to_string(count) + " blocks of " + std::to_string(len) +
                                " tokens " + what + " holds out; add text or lower them");
  std::vector<std::vector<int32_t>> blocks;
  for (int64_t i = 0; i < count; ++i) blocks.push_back(buffer_take(len));
  held_out_tokens_ = count * len;
  return blocks;
}

void TokenStream::block_fits(int64_t len, const std::string& what) {
  if (offset_ != held_out_tokens_) throw std::logic_error(key_ + ": block_fits after the first block was taken");
  if (buffer_fill(len)) return;  // the tokens read stay buffered for the blocks
  throw std::invalid_argument(key_ + ": one pass over the files gives " + std::to_string(offset_ + static_cast<int64_t>(buffer_.size())) +
                              " tokens" +
                              (held_out_tokens_ ? " (" + std::to_string(held_out_tokens_) + " of them held out for validation)" : "") +
                              ", fewer than one block of " + std::to_string(len) + " tokens for " + what +
                              "; add text or lower it");
}

TokenStream::Block TokenStream::block_next(int64_t len) {
  if (!buffer_fill(len)) {
    ++passes_;
    pass_begin();
    if (!buffer_fill(len)) throw std::logic_error(key_ + ": a pass holds no block of " + std::to_string(len) + " tokens");
  }
  Block block;
  block.offset = offset_;
  block.ids = buffer_take(len);
  return block;
}

bool TokenStream::buffer_fill(int64_t count) {
  while (static_cast<int64_t>(buffer_.size()) < count)
    if (!read_document()) return false;
  return true;
}

std::vector<int32_t> TokenStream::buffer_take(int64_t count) {
  std::vector<int32_t> ids(buffer_.begin(), buffer_.begin() + count);
  buffer_.erase(buffer_.begin(), buffer_.begin() + count);
  offset_ += count;
  return ids;
}

void TokenStream::pass_begin() {
  file_index_ = 0;
  file_close();
  buffer_.clear();
  offset_ = 0;
  if (held_out_tokens_ == 0) return;
  if (!buffer_fill(held_out_tokens_)) throw std::logic_error(key_ + ": a pass no longer holds its held-out tokens");
  buffer_take(held_out_tokens_);
}

void TokenStream::file_close() {
  in_.close();
  text_.reset();
  file_open_ = false;
}

void TokenStream::file_open() {
  const std::string& path = files_[file_index_].path;
  file_open_ = true;
  if (!is_npy(path)) {
    text_.emplace(files_[file_index_], kChunkBytes);
    return;
  }
  in_.clear();
  in_.open(path, std::ios::binary);
  if (!in_) throw std::invalid_argument(key_ + ": cannot read file " + path);
  // numpy's format: magic, version, header length (2 bytes in v1, 4 in v2/v3), a Python dict.
  const auto bad = [&](const std::string& what) {
    throw std::invalid_argument(key_ + ": " + path + ": not a 1-D uint16/uint32 .npy token file (" + what + ")");
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

bool TokenStream::read_npy_chunk() {
  if (npy_remaining_ == 0) return false;
  const int64_t count = std::min<int64_t>(npy_remaining_, kChunkBytes);
  std::vector<unsigned char> raw(static_cast<size_t>(count * npy_width_));
  if (!in_.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
    throw std::invalid_argument(key_ + ": " + files_[file_index_].path + ": truncated (fewer ids than its shape says)");
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* p = raw.data() + i * npy_width_;
    const uint32_t id = npy_width_ == 2 ? p[0] | (p[1] << 8)
                                        : p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    if (id >= vocab_size_)
      throw std::invalid_argument(key_ + ": " + files_[file_index_].path + ": token id " + std::to_string(id) + " at index " +
                                  std::to_string(npy_read_ + i) + " is >= the teacher's vocab_size " +
                                  std::to_string(vocab_size_) + " (tokenised with another tokenizer?)");
    buffer_.push_back(static_cast<int32_t>(id));
  }
  npy_remaining_ -= count;
  npy_read_ += count;
  return true;
}

bool TokenStream::read_document() {
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

}  // namespace linear_ard::train

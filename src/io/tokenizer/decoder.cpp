// Decoder: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence, with HF
// tokenizers' semantics.
#include "decoder.h"

#include <stdexcept>

#include "linear_ard/io/utf8.h"

#include "byte_level.h"
#include "json_field.h"
#include "pre_tokenizer.h"
#include "tokenizer_regex.h"

namespace linear_ard::io {
namespace {

// All tokens become bytes (a token with a character outside the byte map keeps its own UTF-8),
// decoded as one lossy UTF-8 string.
class DecoderByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& token : tokens) {
      if (!byte_level_decode(token, bytes)) bytes += token;
    }
    tokens.assign(1, utf8_decode_lossy(bytes));
  }
};

// Replacement becomes a space; the first token loses every replacement unless the scheme is
// "never" (HF's behaviour, which strips the prefix space the pre-tokenizer added).
class DecoderMetaspace : public Decoder {
 public:
  DecoderMetaspace(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& token = tokens[i];
      size_t pos = 0;
      while (pos < token.size()) {
        if (token.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && strip_first_)) out += ' ';
          pos += replacement_.size();
        } else {
          out += token[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class DecoderReplace : public Decoder {
 public:
  DecoderReplace(Regex pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) {
      std::string out;
      size_t last = 0;
      for (const auto& [begin, end] : pattern_.find_all(token)) {
        out.append(token, last, begin - last);
        out += content_;
        last = end;
      }
      out.append(token, last, std::string::npos);
      token = std::move(out);
    }
  }

 private:
  Regex pattern_;
  std::string content_;
};

// The byte a "<0xNN>" token stands for, or -1.
int byte_fallback_value(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Runs of "<0xNN>" tokens become their UTF-8 text, or one U+FFFD per byte when the run is not
// valid UTF-8 as a whole.
class DecoderByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    const auto flush = [&] {
      if (run.empty()) return;
      if (utf8_first_invalid(run) == std::string::npos) {
        out.push_back(run);
      } else {
        out.insert(out.end(), run.size(), "\xEF\xBF\xBD");
      }
      run.clear();
    };
    for (auto& token : tokens) {
      const int byte = byte_fallback_value(token);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }
};

class DecoderFuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& token : tokens) all += token;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from every token.
class DecoderStrip : public Decoder {
 public:
  DecoderStrip(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t n = content_.size();
    for (auto& token : tokens) {
      size_t begin = 0, end = token.size();
      for (size_t k = 0; k < start_ && end - begin >= n && token.compare(begin, n, content_) == 0; ++k) begin += n;
      for (size_t k = 0; k < stop_ && end - begin >= n && token.compare(end - n, n, content_) == 0; ++k) end -= n;
      token = token.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class DecoderSequence : public Decoder {
 public:
  explicit DecoderSequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const auto type = json_required<std::string>(spec, "type", "decoder");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& step : json_required<nlohmann::json>(spec, "decoders", "decoder Sequence")) {
      if (auto d = decoder_from_json(step)) steps.push_back(std::move(d));
    }
    return std::make_unique<DecoderSequence>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<DecoderByteLevel>();
  if (type == "Metaspace") {
    return std::make_unique<DecoderMetaspace>(json_field<std::string>(spec, "replacement", "\u2581", "decoder Metaspace"),
                                              metaspace_prepend_scheme(spec) != PrependScheme::kNever);
  }
  if (type == "Replace") {
    return std::make_unique<DecoderReplace>(json_pattern(spec, "decoder Replace"),
                                            json_required<std::string>(spec, "content", "decoder Replace"));
  }
  if (type == "ByteFallback") return std::make_unique<DecoderByteFallback>();
  if (type == "Fuse") return std::make_unique<DecoderFuse>();
  if (type == "Strip") {
    return std::make_unique<DecoderStrip>(json_required<std::string>(spec, "content", "decoder Strip"),
                                          json_field<size_t>(spec, "start", 0, "decoder Strip"),
                                          json_field<size_t>(spec, "stop", 0, "decoder Strip"));
  }
  throw std::invalid_argument("unsupported decoder type \"" + type +
                              "\" (supported: Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip)");
}

}  // namespace linear_ard::io

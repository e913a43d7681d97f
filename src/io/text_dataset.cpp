// text_dataset: plain text, JSON Lines and JSON arrays read document by document, with errors that
// name file, line and field.
#include "linear_ard/io/text_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "linear_ard/io/utf8.h"  // defines: utf8_first_invalid

namespace linear_ard::io {
namespace {

using nlohmann::json;

constexpr std::string_view kBom = "\xEF\xBB\xBF";

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

std::string hex_byte(unsigned char b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Throws naming the line, file offset and column of the first ill-formed UTF-8 sequence of `text`,
// which starts at line `line` and byte `offset` of the file.
void utf8_check(const std::string& path, std::string_view text, int64_t line, int64_t offset) {
  const size_t bad = utf8_first_invalid(text);
  if (bad == std::string_view::npos) return;
  const size_t newline = bad == 0 ? std::string_view::npos : text.rfind('\n', bad - 1);
  const size_t column = newline == std::string_view::npos ? bad + 1 : bad - newline;
  line += static_cast<int64_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
  fail(path + ":" + std::to_string(line),
       "invalid UTF-8 (byte " + hex_byte(static_cast<unsigned char>(text[bad])) + ") at byte " +
           std::to_string(offset + static_cast<int64_t>(bad)) + " of the file, column " + std::to_string(column) +
           " of the line; data must be UTF-8 (convert with e.g. iconv -f latin1 -t UTF-8)");
}

// A BOM other than UTF-8's means the file is UTF-16 or UTF-32, which the tokenizers do not read.
void utf16_refuse(const std::string& path, std::string_view head) {
  if (head.substr(0, 2) == "\xFF\xFE" || head.substr(0, 2) == "\xFE\xFF")
    fail(path, "is UTF-16 (it starts with a UTF-16 byte-order mark); data must be UTF-8: iconv -f UTF-16 -t UTF-8 " +
                   path + " > converted.txt");
}

// "column 12: syntax error ..." out of nlohmann's "[json.exception.parse_error.101] parse error at
// line 1, column 12: syntax error ...", whose line counts within the parsed text only.
std::string json_error_text(const json::parse_error& e, bool keep_line) {
  const std::string what = e.what();
  const size_t at = what.find(keep_line ? "line " : "column ");
  return at == std::string::npos ? what : what.substr(at);
}

std::string record_keys(const json& record) {
  std::string keys;
  int shown = 0;
  for (const auto& item : record.items()) {
    if (shown++ == 8) {
      keys += ", ...";
      break;
    }
    keys += (keys.empty() ? "" : ", ") + item.key();
  }
  return keys.empty() ? "none" : keys;
}

// The document of one record: a JSON string, or the string at `field` of an object (a key holding
// dots is looked up as it is first, then as a path into nested objects).
std::string record_text(json& record, const std::string& field, const std::string& where) {
  if (record.is_string()) return std::move(record.get_ref<std::string&>());
  if (!record.is_object())
    fail(where, std::string("a record must be a JSON object (or a string), got ") + record.type_name());
  json* value = nullptr;
  if (auto it = record.find(field); it != record.end()) {
    value = &*it;
  } else {
    value = &record;
    std::stringstream parts(field);
    for (std::string part; value && std::getline(parts, part, '.');) {
      auto next = value->is_object() ? value->find(part) : value->end();
      value = value->is_object() && next != value->end() ? &*next : nullptr;
    }
  }
  if (!value)
    fail(where, "no field '" + field + "' (the record's keys: " + record_keys(record) +
                    "; name the text's key with `field:` in a config's data list, --text-field on the command line)");
  if (!value->is_string())
    fail(where, "field '" + field + "' is " + value->type_name() + ", not a string");
  return std::move(value->get_ref<std::string&>());
}

std::string parquet_message(const TextSource& s) {
  const std::filesystem::path out = std::filesystem::path(s.path).replace_extension(".jsonl");
  return "Parquet is not read (Debian 12 packages no Arrow C++ library); convert it to JSON Lines once and give "
         "the .jsonl file instead:\n  python3 -c \"import json, sys, pyarrow.parquet as pq; "
         "[print(json.dumps(r, default=str)) for r in pq.read_table(sys.argv[1]).to_pylist()]\" " +
         s.path + " > " + out.string();
}

}  // namespace

TextFormat text_format_of(const TextSource& source) {
  const std::string ext = extension_of(source.path);
  if (ext == ".parquet") fail(source.path, parquet_message(source));
  if (ext == ".jsonl") return TextFormat::kJsonLines;
  if (ext != ".json") return TextFormat::kPlain;
  std::ifstream in(source.path, std::ios::binary);
  if (!in) fail(source.path, "cannot read the file");
  std::string head(kBom.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  in.clear();
  if (head != kBom) in.seekg(0);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return in && c == '[' ? TextFormat::kJsonArray : TextFormat::kJsonLines;
}

TextReader::TextReader(TextSource source, size_t chunk_bytes)
    : source_(std::move(source)), format_(text_format_of(source_)), chunk_bytes_(chunk_bytes) {
  const std::string& path = source_.path;
  if (std::filesystem::is_directory(path)) fail(path, "is a folder, not a data file");
  in_.open(path, std::ios::binary);
  if (!in_) fail(path, "cannot read the file");
  if (format_ != TextFormat::kJsonArray) return;
  std::stringstream whole;
  whole << in_.rdbuf();
  std::string text = whole.str();
  in_.close();
  utf16_refuse(path, text);
  const int64_t skipped = text.compare(0, kBom.size(), kBom) == 0 ? static_cast<int64_t>(kBom.size()) : 0;
  text.erase(0, static_cast<size_t>(skipped));
  utf8_check(path, text, 1, skipped);
  json records;
  try {
    records = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, "not valid JSON at " + json_error_text(e, /*keep_line=*/true));
  }
  text.clear();
  for (size_t i = 0; i < records.size(); ++i)
    array_.push_back(record_text(records[i], source_.field, path + ": element [" + std::to_string(i) + "]"));
  std::reverse(array_.begin(), array_.end());  // next() pops from the back
}

bool TextReader::next(TextPiece& piece) {
  if (done_) return false;
  bool got = false;
  switch (format_) {
    case TextFormat::kPlain: got = plain_next(piece); break;
    case TextFormat::kJsonLines: got = lines_next(piece); break;
    case TextFormat::kJsonArray: got = array_next(piece); break;
  }
  if (!got && documents_ == 0)
    fail(source_.path, format_ == TextFormat::kPlain ? "holds no text (the file is empty or only whitespace)"
                                                     : "holds no record (the file is empty, only blank lines, or [])");
  if (!got) done_ = true;
  return got;
}

bool TextReader::line_read(std::string& line, bool& newline) {
  if (!std::getline(in_, line)) return false;
  ++line_;
  newline = !in_.eof();
  int64_t begin = offset_;
  offset_ += static_cast<int64_t>(line.size()) + (newline ? 1 : 0);
  if (line_ == 1) {
    utf16_refuse(source_.path, line);
    if (line.compare(0, kBom.size(), kBom) == 0) {
      line.erase(0, kBom.size());
      begin += static_cast<int64_t>(kBom.size());
    }
  }
  utf8_check(source_.path, line, line_, begin);
  return true;
}

bool TextReader::plain_next(TextPiece& piece) {
  piece.text.clear();
  piece.document_begins = line_ == 0;
  std::string line;
  bool newline = false, any = false;
  while (line_read(line, newline)) {
    any = true;
    content_ = content_ || line.find_first_not_of(" \t\r\f\v") != std::string::npos;
    piece.text += line;
    if (newline) piece.text += '\n';
    if (chunk_bytes_ > 0 && piece.text.size() >= chunk_bytes_ && (line.empty() || line == "\r")) break;
  }
  if (!any) return false;
  piece.document_ends = in_.peek() == std::ifstream::traits_type::eof();
  if (piece.document_ends) {
    if (!content_) return false;  // next() reports the empty file
    ++documents_;
    done_ = true;
  }
  return true;
}

bool TextReader::lines_next(TextPiece& piece) {
  std::string line;
  bool newline = false;
  while (line_read(line, newline)) {
    if (is_blank(line)) continue;
    const std::string where = source_.path + ":" + std::to_string(line_);
    json record;
    try {
      record = json::parse(line);
    } catch (const json::parse_error& e) {
      fail(where, "not valid JSON at " + json_error_text(e, /*keep_line=*/false));
    }
    piece.text = record_text(record, source_.field, where);
    piece.document_begins = piece.document_ends = true;
    ++documents_;
    return true;
  }
  return false;
}

bool TextReader::array_next(TextPiece& piece) {
  if (array_.empty()) return false;
  piece.text = std::move(array_.back());
  array_.pop_back();
  piece.document_begins = piece.document_ends = true;
  ++documents_;
  return true;
}

std::vector<std::string> text_documents_read(const TextSource& source) {
  TextReader reader(source);
  std::vector<std::string> documents;
  for (TextPiece piece; reader.next(piece);) documents.push_back(std::move(piece.text));
  return documents;
}

void text_source_check(const TextSource& source) {
  TextReader reader(source, /*chunk_bytes=*/1 << 20);
  for (TextPiece piece; reader.next(piece);) {
  }
}

}  // namespace linear_ard::io

// text_dataset: the one reader of text data files that training (`restore`, `pretrain`),
// evaluation (`eval ppl`, RULER haystacks) and `tokenizer-train` share: plain text, JSON Lines and
// JSON arrays, streamed document by document, every error naming the file and the line (or array
// element) and field at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace linear_ard::io {

// One data file and the key of the text in its JSON records: "text" unless the user names another
// (`data: [{path: a.jsonl, field: content}]`, `eval ppl --text-field content`); a dotted key
// reaches into nested objects ("meta.body").
struct TextSource {
  std::string path;
  std::string field = "text";
};

// How a file is read, chosen by its name (and, for `.json`, by its first character):
//   `.jsonl`                  JSON Lines: one record per line, blank lines skipped;
//   `.json` starting with `[` a JSON array of records (read whole: prefer .jsonl for large data);
//   `.json` otherwise         JSON Lines (what datasets' `to_json` and pandas' `to_json(lines=True)`
//                             write; HF datasets' "json" loader reads both forms the same way);
//   `.parquet`                refused, with the pyarrow command that converts it to JSON Lines;
//   anything else             plain text: the whole file is one document.
// A record is a JSON object whose `field` is a string (the document), or a JSON string. Every file
// is UTF-8; a leading byte-order mark is dropped; line ends (LF or CRLF) are kept in plain text.
enum class TextFormat { kPlain, kJsonLines, kJsonArray };

// The format of `source.path` as above; throws std::invalid_argument naming the file for `.parquet`
// (the message holds the conversion command) and for a `.json` file that cannot be read.
TextFormat text_format_of(const TextSource& source);

// A document, or a piece of a plain-text document when TextReader cuts one.
struct TextPiece {
  std::string text;
  bool document_begins = true;  // the first piece of its document
  bool document_ends = true;    // the last piece of its document
};

class TextReader {
 public:
  // Opens `source`. `chunk_bytes` > 0 cuts plain text into pieces of about that many bytes, each
  // ending after a blank line (a line that is empty or "\r"), so a large file is never held at
  // once; 0 returns it whole. Throws std::invalid_argument naming the file when it cannot be read,
  // is Parquet or UTF-16, or (a JSON array) is not valid JSON or holds a bad record.
  explicit TextReader(TextSource source, size_t chunk_bytes = 0);

  // The next document (or piece) into `piece`; false after the last. Throws std::invalid_argument
  // naming file and line (plain text and JSON Lines; the byte offset too) for invalid UTF-8, and
  // file, line (or array element) and field for a line that is not valid JSON or a record without
  // a string at `field`; at the end of a file that held no document (an empty file, only blank
  // lines or whitespace, an empty array).
  bool next(TextPiece& piece);

  const TextSource& source() const { return source_; }
  TextFormat format() const { return format_; }

 private:
  bool plain_next(TextPiece& piece);
  bool lines_next(TextPiece& piece);
  bool array_next(TextPiece& piece);
  // Reads one line into `line` (BOM dropped from the first), checks its UTF-8 and advances the
  // position; `newline` says whether a line end followed it. false at the end of the file.
  bool line_read(std::string& line, bool& newline);

  TextSource source_;
  TextFormat format_;
  size_t chunk_bytes_;
  std::ifstream in_;
  int64_t line_ = 0;        // lines read
  int64_t offset_ = 0;      // bytes of the file before the next line
  int64_t documents_ = 0;   // documents returned so far
  bool content_ = false;    // plain text: a byte other than whitespace seen
  bool done_ = false;
  std::vector<std::string> array_;  // a JSON array's documents, read at opening
};

// Every document of `source`, whole.
std::vector<std::string> text_documents_read(const TextSource& source);

// Reads `source` through (plain text in pieces, never whole) so that any of TextReader's errors
// surfaces now rather than when a stream reaches it.
void text_source_check(const TextSource& source);

}  // namespace linear_ard::io

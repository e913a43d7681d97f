// text_dataset: the format rule, the odd files users bring (empty, BOM, CRLF, blank lines, no final
// newline, huge lines, JSON arrays, nested fields) and errors that name file, line and field.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io_test_dir.h"
#include "linear_ard/io/text_dataset.h"

using namespace linear_ard::io;

namespace {

class TextDatasetTest : public IoTestDir {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::vector<std::string> read(const std::string& name, const std::string& bytes, const std::string& field = "text") {
    return text_documents_read({write(name, bytes), field});
  }
  // The message of the std::invalid_argument that reading `bytes` as `name` throws ("" if none).
  std::string error(const std::string& name, const std::string& bytes, const std::string& field = "text") {
    try {
      read(name, bytes, field);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }
  // Every piece of a chunked read.
  std::vector<TextPiece> pieces(const std::string& file, size_t chunk_bytes) {
    TextReader reader({file}, chunk_bytes);
    std::vector<TextPiece> out;
    for (TextPiece p; reader.next(p);) out.push_back(p);
    return out;
  }
};

using Docs = std::vector<std::string>;

TEST_F(TextDatasetTest, FormatFollowsTheNameAndAJsonFilesFirstCharacter) {
  EXPECT_EQ(text_format_of({write("a.jsonl", "[\"x\"]\n")}), TextFormat::kJsonLines);
  EXPECT_EQ(text_format_of({write("b.JSONL", "{}\n")}), TextFormat::kJsonLines);
  EXPECT_EQ(text_format_of({write("c.json", "\xEF\xBB\xBF \n\t[\"x\"]")}), TextFormat::kJsonArray);
  EXPECT_EQ(text_format_of({write("d.json", "{\"text\": \"x\"}\n")}), TextFormat::kJsonLines);
  EXPECT_EQ(text_format_of({write("e.json", "")}), TextFormat::kJsonLines);
  EXPECT_EQ(text_format_of({write("f.txt", "[\"x\"]")}), TextFormat::kPlain);
  EXPECT_EQ(text_format_of({write("g", "x")}), TextFormat::kPlain);
}

TEST_F(TextDatasetTest, JsonArrayOfStringsAndObjectsIsRecords) {
  EXPECT_EQ(read("a.json", R"(["one", {"text": "two", "id": 2}, "three"])"), (Docs{"one", "two", "three"}));
  // The same documents as JSON Lines, under either name.
  const std::string lines = "{\"text\": \"one\"}\n\"two\"\n{\"text\": \"three\"}\n";
  EXPECT_EQ(read("b.jsonl", lines), (Docs{"one", "two", "three"}));
  EXPECT_EQ(read("c.json", lines), (Docs{"one", "two", "three"}));
  const std::string e = error("d.json", R"([{"text": "a"}, {"body": "b"}])");
  EXPECT_NE(e.find(path("d.json") + ": element [1]: no field 'text'"), std::string::npos) << e;
  EXPECT_NE(error("e.json", "[1]").find("element [0]: a record must be a JSON object (or a string), got number"),
            std::string::npos);
  EXPECT_NE(error("f.json", "[\"a\",\n \"b\"").find(path("f.json") + ": not valid JSON at line 2"), std::string::npos);
}

TEST_F(TextDatasetTest, EmptyFilesAreErrorsNamingTheFile) {
  const std::vector<std::pair<std::string, std::string>> empty = {
      {"a.txt", ""}, {"b.txt", " \n\r\n\t\n"}, {"c.txt", "\xEF\xBB\xBF"}, {"d.jsonl", ""},
      {"e.jsonl", "\n  \r\n\n"}, {"f.json", "[]"}, {"g.json", "\xEF\xBB\xBF[ ]\n"}, {"h.json", ""}};
  for (const auto& [name, bytes] : empty) {
    const std::string e = error(name, bytes);
    EXPECT_NE(e.find(path(name) + ": holds no "), std::string::npos) << name << ": " << e;
  }
}

TEST_F(TextDatasetTest, ByteOrderMarkIsDropped) {
  EXPECT_EQ(read("a.txt", "\xEF\xBB\xBFhello\n"), (Docs{"hello\n"}));
  EXPECT_EQ(read("b.jsonl", "\xEF\xBB\xBF{\"text\": \"x\"}\n"), (Docs{"x"}));
  EXPECT_EQ(read("c.json", "\xEF\xBB\xBF[\"x\"]"), (Docs{"x"}));
  // A UTF-16 file is named as such, not read as garbage.
  for (const std::string name : {"d.txt", "e.jsonl", "f.json"}) {
    const std::string e = error(name, std::string("\xFF\xFEh\0i\0", 6));
    EXPECT_NE(e.find(path(name) + ": is UTF-16"), std::string::npos) << e;
  }
}

TEST_F(TextDatasetTest, CrlfBlankLinesAndAMissingFinalNewline) {
  // Plain text keeps its bytes (line ends included, no newline added at the end).
  EXPECT_EQ(read("a.txt", "one\r\ntwo\r\n\r\nthree"), (Docs{"one\r\ntwo\r\n\r\nthree"}));
  EXPECT_EQ(read("b.txt", "x"), (Docs{"x"}));
  // JSON Lines: CRLF ends, blank lines (also "\r" and spaces) skipped, a last line without newline.
  EXPECT_EQ(read("c.jsonl", "{\"text\": \"a\"}\r\n\r\n   \n{\"text\": \"b\"}\r\n{\"text\": \"c\"}"), (Docs{"a", "b", "c"}));
  // Line numbers count the blank lines.
  const std::string e = error("d.jsonl", "{\"text\": \"a\"}\n\n\n{\"txt\": \"b\"}\n");
  EXPECT_NE(e.find(path("d.jsonl") + ":4: no field 'text' (the record's keys: txt"), std::string::npos) << e;
}

TEST_F(TextDatasetTest, ChunkedPlainTextCutsAfterBlankLinesAndKeepsEveryByte) {
  std::string text = "\xEF\xBB\xBF";
  for (int p = 0; p < 40; ++p) text += "paragraph " + std::to_string(p) + " line one\r\nline two\r\n\r\n";
  text += "tail without newline";
  const auto got = pieces(write("a.txt", text), 100);
  ASSERT_GT(got.size(), 5u);
  std::string joined;
  for (size_t i = 0; i < got.size(); ++i) {
    joined += got[i].text;
    EXPECT_EQ(got[i].document_begins, i == 0);
    EXPECT_EQ(got[i].document_ends, i + 1 == got.size());
    if (i + 1 < got.size()) {
      EXPECT_GE(got[i].text.size(), 100u);
      EXPECT_EQ(got[i].text.substr(got[i].text.size() - 4), "\r\n\r\n");  // cut after a (CRLF) blank line
    }
  }
  EXPECT_EQ(joined, text.substr(3));
  // A cut that falls on the file's end still ends the document.
  const auto exact = pieces(write("b.txt", std::string(100, 'x') + "\n\n"), 100);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_TRUE(exact[0].document_ends);
}

TEST_F(TextDatasetTest, FieldIsNamedNestedOrMissing) {
  const std::string line = R"({"id": 7, "content": "c", "meta": {"body": "b", "n": 1}, "a.b": "dotted"})";
  EXPECT_EQ(read("a.jsonl", line, "content"), (Docs{"c"}));
  EXPECT_EQ(read("b.jsonl", line, "meta.body"), (Docs{"b"}));
  EXPECT_EQ(read("c.jsonl", line, "a.b"), (Docs{"dotted"}));  // a key with dots, taken as it is
  std::string e = error("d.jsonl", "\n" + line, "meta.title");
  EXPECT_NE(e.find(path("d.jsonl") + ":2: no field 'meta.title' (the record's keys: a.b, content, id, meta"),
            std::string::npos) << e;
  e = error("e.jsonl", line, "text");
  EXPECT_NE(e.find(":1: no field 'text'"), std::string::npos) << e;
  e = error("f.jsonl", line, "meta.n");
  EXPECT_NE(e.find(":1: field 'meta.n' is number, not a string"), std::string::npos) << e;
  e = error("g.jsonl", R"({"text": null})");
  EXPECT_NE(e.find(":1: field 'text' is null, not a string"), std::string::npos) << e;
  e = error("h.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\",\n");
  EXPECT_NE(e.find(path("h.jsonl") + ":2: not valid JSON at column"), std::string::npos) << e;
}

TEST_F(TextDatasetTest, InvalidUtf8NamesFileLineAndByte) {
  // Line 3, column 5 ("abcd" then 0xFF); the file offset counts the two lines before it.
  std::string e = error("a.txt", "line one\nline two\nabcd\xFF rest\nmore\n");
  EXPECT_NE(e.find(path("a.txt") + ":3: invalid UTF-8 (byte 0xFF) at byte 22 of the file, column 5 of the line"),
            std::string::npos) << e;
  e = error("b.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"bad \xC3\x28\"}\n");
  EXPECT_NE(e.find(path("b.jsonl") + ":2: invalid UTF-8 (byte 0xC3) at byte 29 of the file, column 15"),
            std::string::npos) << e;
  e = error("c.json", "[\"ok\",\n \"\xED\xA0\x80\"]");  // an encoded surrogate
  EXPECT_NE(e.find(path("c.json") + ":2: invalid UTF-8 (byte 0xED) at byte 9 of the file, column 3"),
            std::string::npos) << e;
  // After a BOM the offset is still the file's.
  e = error("d.txt", "\xEF\xBB\xBF\x80");
  EXPECT_NE(e.find(":1: invalid UTF-8 (byte 0x80) at byte 3 of the file, column 1"), std::string::npos) << e;
}

TEST_F(TextDatasetTest, HugeLinesAreRead) {
  const std::string big(20 << 20, 'a');
  EXPECT_EQ(read("a.txt", big), (Docs{big}));
  EXPECT_EQ(read("b.jsonl", "{\"text\": \"" + big + "\"}\n{\"text\": \"x\"}"), (Docs{big, "x"}));
  const auto got = pieces(write("c.txt", "x\n\n" + big + "\n"), 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].text, big + "\n");
}

TEST_F(TextDatasetTest, ParquetAndFoldersAreRefusedClearly) {
  const std::string e = error("data.parquet", "PAR1");
  EXPECT_NE(e.find(path("data.parquet") + ": Parquet is not read"), std::string::npos) << e;
  EXPECT_NE(e.find("pyarrow.parquet"), std::string::npos) << e;
  EXPECT_NE(e.find(" > " + path("data.jsonl")), std::string::npos) << e;
  std::filesystem::create_directories(path("folder"));
  try {
    TextReader reader({path("folder")});
    FAIL() << "a folder was read";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("is a folder"), std::string::npos) << err.what();
  }
}

}  // namespace

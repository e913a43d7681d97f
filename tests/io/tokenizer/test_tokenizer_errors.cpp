// Bad inputs give errors that name the file and the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "linear_ard/io/tokenizer.h"
#include "linear_ard/io/tokenizer_bpe.h"
#include "linear_ard/io/tokenizer_sentencepiece.h"
#include "tokenizer_test_files.h"  // defines: ScratchFolder

namespace linear_ard::io {
namespace {

// A tokenizer.json with a two-letter byte-free BPE; `model_extra` is spliced into "model".
std::string tokenizer_json(const std::string& model_extra, const std::string& merges = R"(["a b"])") {
  return R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
             "post_processor": null, "decoder": null,
             "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": )" +
         merges + model_extra + "}}";
}

// The message of the std::runtime_error `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "message: \"" << message << "\" lacks \"" << part << "\"";
}

TEST(TokenizerErrors, MissingFileAndFolder) {
  ScratchFolder dir;
  const std::string missing = dir.path() + "/tokenizer.json";
  const auto message = error_of([&] { BpeTokenizer t(missing); });
  expect_contains(message, missing);
  expect_contains(message, "cannot open");
  expect_contains(error_of([&] { tokenizer_load(dir.path()); }), "neither tokenizer.json nor tokenizer.model");
  expect_contains(error_of([&] { SentencePieceTokenizer t(dir.path() + "/tokenizer.model"); }), "tokenizer.model");
}

TEST(TokenizerErrors, InvalidJson) {
  ScratchFolder dir;
  const auto path = dir.write("tokenizer.json", "{\"model\": ");
  expect_contains(error_of([&] { BpeTokenizer t(path); }), path + ": invalid JSON");
}

TEST(TokenizerErrors, UnsupportedModelType) {
  ScratchFolder dir;
  const auto path = dir.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  const auto message = error_of([&] { BpeTokenizer t(path); });
  expect_contains(message, path);
  expect_contains(message, "unsupported model type \"Unigram\"");
}

TEST(TokenizerErrors, MalformedMerges) {
  ScratchFolder dir;
  const auto path = dir.write("tokenizer.json", tokenizer_json("", R"(["a b", "ab"])"));
  const auto message = error_of([&] { BpeTokenizer t(path); });
  expect_contains(message, path);
  expect_contains(message, "model.merges[1]");
  const auto missing = dir.write("tokenizer.json", tokenizer_json("", R"(["a c"])"));
  expect_contains(error_of([&] { BpeTokenizer t(missing); }), "token \"c\" is not in the vocabulary");
}

TEST(TokenizerErrors, UnsupportedComponentsAreNamed) {
  ScratchFolder dir;
  const auto base = nlohmann::json::parse(tokenizer_json(""));
  const auto path = dir.path() + "/tokenizer.json";
  // Each stage with a component HF has and we do not, alone and inside a Sequence.
  const std::vector<std::tuple<const char*, nlohmann::json, const char*>> cases = {
      {"normalizer", {{"type", "BertNormalizer"}}, "unsupported normalizer type \"BertNormalizer\""},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}},
       "unsupported normalizer type \"Precompiled\""},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}, "unsupported pre_tokenizer type \"BertPreTokenizer\""},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}},
                                                                  {{"type", "UnicodeScripts"}}}}},
       "unsupported pre_tokenizer type \"UnicodeScripts\""},
      {"decoder", {{"type", "WordPiece"}}, "unsupported decoder type \"WordPiece\""},
      {"post_processor", {{"type", "RobertaProcessing"}}, "unsupported post_processor type \"RobertaProcessing\""},
  };
  for (const auto& [stage, component, expected] : cases) {
    auto spec = base;
    spec[stage] = component;
    dir.write("tokenizer.json", spec.dump());
    const auto message = error_of([&] { BpeTokenizer t(path); });
    expect_contains(message, path);
    expect_contains(message, expected);
  }
  auto spec = base;
  spec["pre_tokenizer"] = {{"type", "Punctuation"}, {"behavior", "Sideways"}};
  dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "pre_tokenizer Punctuation: unknown behavior \"Sideways\"");
  spec["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(["}}}, {"behavior", "Isolated"}};
  dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "invalid regex");
  spec["pre_tokenizer"] = nullptr;
  spec["model"]["continuing_subword_prefix"] = "##";
  dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "continuing_subword_prefix");
}

// A Qwen2-style tokenizer.json (NFC normalizer, regex Split, ByteLevel without regex)
// used to fail at load with 'unsupported normalizer type "NFC"'.
TEST(TokenizerErrors, QwenStylePipelineLoads) {
  ScratchFolder dir;
  auto spec = nlohmann::json::parse(tokenizer_json(""));
  // U+00E9's UTF-8 bytes C3 A9 are the byte-level characters U+00C3 U+00A9, merged into token 2.
  spec["model"]["vocab"] = {{"\xC3\x83", 0}, {"\xC2\xA9", 1}, {"\xC3\x83\xC2\xA9", 2}, {"e", 3}};
  spec["model"]["merges"] = {"\xC3\x83 \xC2\xA9"};
  spec["normalizer"] = {{"type", "NFC"}};
  spec["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {
      {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "Isolated"}, {"invert", false}},
      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  spec["decoder"] = {{"type", "ByteLevel"}};
  const auto path = dir.write("tokenizer.json", spec.dump());
  const BpeTokenizer tokenizer(path);
  // "e" + COMBINING ACUTE composes to U+00E9 (without NFC: "e" and two unknown bytes).
  EXPECT_EQ(tokenizer.encode("e\xCC\x81", false), (std::vector<int32_t>{2}));
  EXPECT_EQ(tokenizer.decode({2, 3}), "\xC3\xA9" "e");
}

TEST(TokenizerErrors, BadConfigAndBadText) {
  ScratchFolder dir;
  dir.write("tokenizer.json", tokenizer_json(""));
  const auto config = dir.write("tokenizer_config.json", R"({"add_bos_token": "yes"})");
  const auto message = error_of([&] { tokenizer_load(dir.path()); });
  expect_contains(message, config);
  expect_contains(message, "add_bos_token");
  dir.write("tokenizer_config.json", "{}");
  const auto tokenizer = tokenizer_load(dir.path());
  EXPECT_EQ(tokenizer->encode("ab"), (std::vector<int32_t>{2}));
  EXPECT_THROW(tokenizer->encode("a\xFF"), std::invalid_argument);
  EXPECT_THROW(tokenizer->id_to_token(3), std::out_of_range);
  EXPECT_EQ(tokenizer->token_to_id("zz"), -1);
  EXPECT_EQ(tokenizer->decode({0, 99, 1}), "a b");  // unknown ids skipped; no decoder joins with spaces
}

}  // namespace
}  // namespace linear_ard::io

// Bad inputs give errors that name the file and the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  auto spec = nlohmann::json::parse(tokenizer_json(""));
  spec["normalizer"] = {{"type", "NFKC"}};
  const auto path = dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "unsupported normalizer type \"NFKC\"");
  spec["normalizer"] = nullptr;
  spec["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(["}}}, {"behavior", "Isolated"}};
  dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "invalid regex");
  spec["pre_tokenizer"] = nullptr;
  spec["model"]["continuing_subword_prefix"] = "##";
  dir.write("tokenizer.json", spec.dump());
  expect_contains(error_of([&] { BpeTokenizer t(path); }), "continuing_subword_prefix");
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

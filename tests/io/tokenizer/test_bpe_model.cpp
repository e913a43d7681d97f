// Tests of the BPE model: merges in both serialisations, merge order, byte fallback, unknown
// tokens, ignore_merges, and clear errors for malformed merges.
#include <gtest/gtest.h>

#include "bpe_model.h"  // defines: BpeModel, bpe_merges_from_json

namespace linear_ard::io {
namespace {

using nlohmann::json;

json small_model() {
  return json{{"type", "BPE"},
              {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"<unk>", 6},
                         {"<0x7A>", 7}, {"zz", 8}}},
              {"merges", {"b c", "a b", "a bc"}},
              {"unk_token", "<unk>"}};
}

std::vector<int32_t> tokenize(const BpeModel& model, std::string_view word) {
  std::vector<int32_t> ids;
  model.tokenize(word, ids);
  return ids;
}

TEST(BpeMerges, StringAndPairFormsAgree) {
  const auto strings = bpe_merges_from_json(json{"a b", "ab c"});
  const auto pairs = bpe_merges_from_json(json::parse(R"([["a", "b"], ["ab", "c"]])"));
  EXPECT_EQ(strings, pairs);
  ASSERT_EQ(strings.size(), 2u);
  EXPECT_EQ(strings[1].first, "ab");
  EXPECT_EQ(strings[1].second, "c");
}

TEST(BpeMerges, MalformedEntriesNameTheirIndex) {
  for (const auto& bad : {json{"a b", "a b c"}, json{"a b", "ab"}, json::parse(R"(["a b", ["a"]])"),
                          json::parse(R"(["a b", 5])")}) {
    try {
      bpe_merges_from_json(bad);
      FAIL() << "accepted " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("model.merges[1]"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(bpe_merges_from_json(json{{"a", "b"}}), std::invalid_argument);  // an object
}

TEST(BpeModel, MergesApplyByRankNotPosition) {
  const BpeModel model(small_model());
  // "b c" (rank 0) wins over "a b" (rank 1), then "a bc" joins the rest.
  EXPECT_EQ(tokenize(model, "abc"), (std::vector<int32_t>{5}));
  EXPECT_EQ(tokenize(model, "abab"), (std::vector<int32_t>{3, 3}));
  EXPECT_EQ(tokenize(model, "cab"), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(tokenize(model, "abc"), (std::vector<int32_t>{5}));  // from the cache
}

TEST(BpeModel, UnknownCharactersFuseOnlyWhenAsked) {
  auto spec = small_model();
  EXPECT_EQ(tokenize(BpeModel(spec), "a\xC3\xA9\xC3\xA9" "b"), (std::vector<int32_t>{0, 6, 6, 1}));
  spec["fuse_unk"] = true;
  EXPECT_EQ(tokenize(BpeModel(spec), "a\xC3\xA9\xC3\xA9" "b"), (std::vector<int32_t>{0, 6, 1}));
  spec.erase("unk_token");
  EXPECT_EQ(tokenize(BpeModel(spec), "a\xC3\xA9"), (std::vector<int32_t>{0}));  // dropped, as in HF
}

TEST(BpeModel, ByteFallbackAndIgnoreMerges) {
  auto spec = small_model();
  spec["byte_fallback"] = true;
  EXPECT_EQ(tokenize(BpeModel(spec), "az"), (std::vector<int32_t>{0, 7}));
  // Without merges "zz" is unreachable; ignore_merges takes a pre-token found whole in the vocabulary.
  EXPECT_EQ(tokenize(BpeModel(spec), "zz"), (std::vector<int32_t>{7, 7}));
  spec["ignore_merges"] = true;
  EXPECT_EQ(tokenize(BpeModel(spec), "zz"), (std::vector<int32_t>{8}));
}

TEST(BpeModel, MergeOutsideTheVocabularyIsAnError) {
  auto spec = small_model();
  spec["merges"] = {"a b", "c a"};
  try {
    BpeModel model(spec);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.merges[1]: token \"ca\""), std::string::npos) << e.what();
  }
  spec = small_model();
  spec["unk_token"] = "<nope>";
  EXPECT_THROW(BpeModel model(spec), std::invalid_argument);
}

}  // namespace
}  // namespace linear_ard::io

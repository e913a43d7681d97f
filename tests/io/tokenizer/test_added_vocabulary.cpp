// Tests of how added tokens cut text: leftmost-longest matching, lstrip/rstrip, single_word,
// and normalized tokens.
#include <gtest/gtest.h>

#include "added_vocabulary.h"  // defines: AddedVocabulary, AddedToken, AddedSplit

namespace linear_ard::io {
namespace {

AddedToken token(std::string content, int32_t id) {
  AddedToken t;
  t.content = std::move(content);
  t.id = id;
  t.special = true;
  return t;
}

// The splits of `text` as "id:text" strings (id -1 for plain text).
std::vector<std::string> cuts(const AddedVocabulary& v, std::string_view text, bool normalized = false) {
  std::vector<std::string> out;
  for (const auto& s : v.split(text, normalized)) {
    out.push_back(std::to_string(s.id) + ":" + std::string(text.substr(s.begin, s.end - s.begin)));
  }
  return out;
}

using Cuts = std::vector<std::string>;

TEST(AddedVocabulary, LeftmostLongestMatches) {
  AddedVocabulary v;
  v.add(token("<s>", 1), nullptr);
  v.add(token("<s>x", 2), nullptr);
  v.add(token("s", 3), nullptr);
  EXPECT_EQ(cuts(v, "a<s>xb<s>"), (Cuts{"-1:a", "2:<s>x", "-1:b", "1:<s>"}));
  EXPECT_EQ(cuts(v, "<s><s>"), (Cuts{"1:<s>", "1:<s>"}));
  EXPECT_EQ(cuts(v, "ss"), (Cuts{"3:s", "3:s"}));
  EXPECT_EQ(cuts(v, ""), (Cuts{"-1:"}));
  EXPECT_EQ(cuts(v, "plain"), (Cuts{"-1:plain"}));
}

TEST(AddedVocabulary, LstripAndRstripSwallowWhitespace) {
  AddedVocabulary v;
  auto t = token("<m>", 5);
  t.lstrip = t.rstrip = true;
  v.add(t, nullptr);
  EXPECT_EQ(cuts(v, "a \t<m>\n b"), (Cuts{"-1:a", "5: \t<m>\n ", "-1:b"}));
  // The left strip never reaches into a previous match.
  EXPECT_EQ(cuts(v, "<m> <m>"), (Cuts{"5:<m> ", "5:<m>"}));
}

TEST(AddedVocabulary, SingleWordNeedsNonWordNeighbours) {
  AddedVocabulary v;
  auto t = token("magic", 7);
  t.single_word = true;
  v.add(t, nullptr);
  EXPECT_EQ(cuts(v, "a magic!"), (Cuts{"-1:a ", "7:magic", "-1:!"}));
  EXPECT_EQ(cuts(v, "amagic"), (Cuts{"-1:amagic"}));
  EXPECT_EQ(cuts(v, "magic_x"), (Cuts{"-1:magic_x"}));  // '_' is a word character
  EXPECT_EQ(cuts(v, "magic\xC2\xB2"), (Cuts{"7:magic", "-1:\xC2\xB2"}));  // '²' is not
}

TEST(AddedVocabulary, NormalizedTokensAreMatchedInNormalizedText) {
  const auto normalizer = normalizer_from_json(nlohmann::json::parse(
      R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "_"}, {"type": "Replace", "pattern": {"String": " "}, "content": "_"}]})"));
  AddedVocabulary v;
  auto t = token("_x", 9);
  t.normalized = true;
  v.add(t, normalizer.get());
  ASSERT_NE(v.text_of(9), nullptr);
  EXPECT_EQ(*v.text_of(9), "__x");
  EXPECT_EQ(cuts(v, "a__x", true), (Cuts{"-1:a", "9:__x"}));
  EXPECT_EQ(cuts(v, "a__x", false), (Cuts{"-1:a__x"}));
}

}  // namespace
}  // namespace linear_ard::io

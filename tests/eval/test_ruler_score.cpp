// RULER's scoring rules and task table on crafted inputs; the rules are RULER's
// scripts/eval/synthetic/constants.py (string_match_all / _part) and evaluate.py (postprocess_pred).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "linear_ard/eval/ruler.h"       // defines: ruler_sample_seed
#include "linear_ard/eval/ruler_task.h"  // defines: ruler_tasks, ruler_task_find, ruler_prediction_clean
#include "linear_ard/eval/score.h"       // defines: string_match_all, string_match_part

namespace linear_ard::eval {
namespace {

TEST(RulerScore, MatchAllIsTheFractionFoundIgnoringCase) {
  EXPECT_DOUBLE_EQ(string_match_all("the numbers are 123 and ABC-def", {"123", "abc-DEF", "999", "x7"}), 0.5);
  EXPECT_DOUBLE_EQ(string_match_all("1234567", {"1234567"}), 1.0);
  EXPECT_DOUBLE_EQ(string_match_all("123456", {"1234567"}), 0.0);  // a prefix is not a match
  EXPECT_DOUBLE_EQ(string_match_all("anything", {}), 0.0);
}

TEST(RulerScore, MatchPartIsAnyFound) {
  EXPECT_DOUBLE_EQ(string_match_part("Paris, France", {"London", "paris"}), 1.0);
  EXPECT_DOUBLE_EQ(string_match_part("Rome", {"London", "Paris"}), 0.0);
}

TEST(RulerScore, PredictionCleanStripsAndTurnsControlCharactersIntoNewlines) {
  EXPECT_EQ(ruler_prediction_clean("  \t 12\x01 34\x1f\n "), "12\n 34");
  EXPECT_EQ(ruler_prediction_clean("\x02\x03"), "");
  EXPECT_EQ(ruler_prediction_clean(" plain "), "plain");
}

TEST(RulerTasks, TheThirteenTasksWithRulersBudgets) {
  std::set<std::string> names;
  for (const auto& t : ruler_tasks()) {
    names.insert(t.name);
    const bool qa = t.kind == RulerKind::ruler_kind_qa;
    EXPECT_EQ(t.match_part, qa) << t.name;
  }
  EXPECT_EQ(names.size(), 13u);
  EXPECT_EQ(ruler_task_find("niah_multivalue").num_values, 4);
  EXPECT_EQ(ruler_task_find("niah_multiquery").num_queries, 4);
  EXPECT_EQ(ruler_task_find("vt").max_new_tokens, 30);
  EXPECT_EQ(ruler_task_find("cwe").max_new_tokens, 120);
  EXPECT_EQ(ruler_task_find("fwe").max_new_tokens, 50);
  EXPECT_EQ(ruler_task_find("qa_2").max_new_tokens, 32);
  try {
    ruler_task_find("niah_single_9");
    FAIL() << "no error for an unknown task";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("niah_single_9"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("niah_multikey_3"), std::string::npos);  // lists the known ones
  }
}

TEST(RulerTasks, SampleSeedsDependOnEveryPart) {
  const uint64_t s = ruler_sample_seed(42, "vt", 4096, 0);
  EXPECT_EQ(s, ruler_sample_seed(42, "vt", 4096, 0));
  std::set<uint64_t> seen{s, ruler_sample_seed(43, "vt", 4096, 0), ruler_sample_seed(42, "cwe", 4096, 0),
                          ruler_sample_seed(42, "vt", 8192, 0), ruler_sample_seed(42, "vt", 4096, 1)};
  EXPECT_EQ(seen.size(), 5u);
}

}  // namespace
}  // namespace linear_ard::eval

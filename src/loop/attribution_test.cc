#include "loop/attribution.h"

#include <gtest/gtest.h>

namespace kforge::loop {

using json = nlohmann::json;

TEST(Attribution, FindsTheRecommendationsALineCites) {
  EXPECT_EQ(cited_recommendations("Applying recommendation 2: vectorise the row loop"), (std::vector<int>{2}));
  EXPECT_EQ(cited_recommendations("Recommendations 1 and 3 (fuse, then tile)"), (std::vector<int>{1, 3}));
  EXPECT_EQ(cited_recommendations("#1, #4: blocked GEMM"), (std::vector<int>{1, 4}));
  EXPECT_TRUE(cited_recommendations("Online softmax in one pass over 2 rows").empty());
}

TEST(Attribution, UnderstandsListsAndRangesAfterApply) {
  EXPECT_EQ(cited_recommendations("Applies 1, 2 and 3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(cited_recommendations("Applied 1-3: tiles, vector loads, unrolling"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(cited_recommendations("applying recommendations 2\u20134"), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(cited_recommendations("Recs 2 to 4, then #6"), (std::vector<int>{2, 3, 4, 6}));
  EXPECT_EQ(cited_recommendations("Apply #1 and #3"), (std::vector<int>{1, 3}));
  EXPECT_TRUE(cited_recommendations("Applies 4x unrolling").empty());
}

TEST(Attribution, ACandidateThatAppliedARangeIsCreditedForThoseOnly) {
  json recs = {{"1", {"a", "b", "c", "d"}}};
  json candidates = json::parse(R"([{"round": 1, "step": "r1.s0.a0", "idea": "Applied 1-3", "decision": "accepted"}])");
  json rows = attribute_recommendations(recs, candidates);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rows[i]["paid_off"].get<bool>()) << i;
  EXPECT_TRUE(rows[3]["tried_by"].empty());
  EXPECT_FALSE(rows[3]["paid_off"].get<bool>());
}

TEST(Attribution, LinksEachRecommendationToTheCandidateThatTriedItAndItsEffect) {
  json recs = {{"1", {"Vectorise the inner loop", "Fuse the bias", "Use two accumulators"}}};
  json candidates = json::parse(R"([
    {"round": 0, "step": "r0.s0.a0", "decision": "accepted"},
    {"round": 1, "step": "r1.s0.a0", "idea": "Recommendation 1: AVX-512 inner loop", "decision": "accepted",
     "vs_best": {"point": 2.1, "ci_low": 1.9, "ci_high": 2.3}},
    {"round": 1, "step": "r1.s1.a0", "idea": "recommendation 3, two accumulators", "decision": "rejected",
     "vs_best": {"point": 0.9, "ci_low": 0.85, "ci_high": 0.95}}])");
  json rows = attribute_recommendations(recs, candidates);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["tried_by"].size(), 1u);
  EXPECT_EQ(rows[0]["tried_by"][0]["step"], "r1.s0.a0");
  EXPECT_EQ(rows[0]["tried_by"][0]["vs_best"]["point"], 2.1);
  EXPECT_TRUE(rows[0]["paid_off"].get<bool>());
  EXPECT_TRUE(rows[1]["tried_by"].empty());  // nobody tried the bias fusion
  EXPECT_FALSE(rows[1]["paid_off"].get<bool>());
  EXPECT_EQ(rows[2]["tried_by"][0]["step"], "r1.s1.a0");
  EXPECT_FALSE(rows[2]["paid_off"].get<bool>());
}

TEST(Attribution, ACandidateCitingNothingIsLinkedToEveryRecommendationOfItsRound) {
  json recs = {{"1", {"a", "b"}}};
  json candidates = json::parse(R"([{"round": 1, "step": "r1.s0.a0", "idea": "faster", "decision": "undecided"}])");
  json rows = attribute_recommendations(recs, candidates);
  for (const auto& row : rows) {
    ASSERT_EQ(row["tried_by"].size(), 1u);
    EXPECT_FALSE(row["tried_by"][0]["cited"].get<bool>());
    EXPECT_EQ(row["tried_by"][0]["decision"], "undecided");
  }
  // Kept, it still pays off none of them: which one it followed is unknown.
  candidates[0]["decision"] = "accepted";
  for (const auto& row : attribute_recommendations(recs, candidates)) EXPECT_FALSE(row["paid_off"].get<bool>());
}

}  // namespace kforge::loop

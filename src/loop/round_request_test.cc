// Round k's generation request is whole and compact: the problem, the target's notes once, the
// best's source once, the attempts (bounded), the advice; its size does not grow with the round.
#include <gtest/gtest.h>

#include "agent/prompt_renderer.h"
#include "loop/attempt_history.h"
#include "loop/refine_loop.h"

namespace kforge::loop {
namespace {

using json = nlohmann::json;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// The round message of round `round` after one rejected attempt per round since the first.
std::string round_message(int round) {
  std::vector<AttemptRecord> history = {{"r0.s0.a0", 0, "kept (first correct)", Ratio{1.1, 1.0, 1.2}, {}, {}, {}, "rows"}};
  for (int r = 1; r < round; ++r)
    history.push_back({candidate_step(r, 0, 0), r, "rejected", Ratio{0.9, 0.8, 1.0}, {}, Ratio{0.95, 0.9, 0.99}, {},
                       "variant " + std::to_string(r)});
  json ctx = {{"problem_name", "23_Softmax"},
              {"round", round},
              {"target", {{"name", "cpu"}}},
              {"reference", "REFERENCE SOURCE"},
              {"shapes", "- forward input 0: float32 tensor [128, 8192]\n"},
              {"notes", "TARGET NOTES"},
              {"example", {{"reference", "EXAMPLE REF"}, {"candidate", "EXAMPLE CAND"}}},
              {"best", {{"step", "r0.s0.a0"}, {"source", std::string(4000, 'b')}, {"vs_eager", "1.10x [1.00, 1.20]"}}},
              {"recommendations", json::array({{{"rank", 1}, {"text", "fuse"}}, {{"rank", 2}, {"text", "unroll"}}})},
              {"has_recommendations", true}};
  std::size_t omitted = 0;
  ctx["history"] = recent_history_rows(history_rows(history), 12, omitted);
  if (omitted > 0) ctx["history_omitted"] = omitted;
  return agent::PromptLibrary::load(std::filesystem::path(KFORGE_SOURCE_DIR) / "prompts").render("generate.round", ctx);
}

TEST(RoundRequest, CarriesTheProblemNotesAndBestOnce) {
  const std::string text = round_message(3);
  for (const char* once : {"REFERENCE SOURCE", "TARGET NOTES", "float32 tensor [128, 8192]", "1. fuse", "2. unroll"})
    EXPECT_EQ(count(text, once), 1u) << once << "\n" << text;
  EXPECT_EQ(count(text, std::string(4000, 'b')), 1u);
  EXPECT_EQ(count(text, "EXAMPLE CAND"), 0u) << "the worked example only until a candidate is correct";
}

TEST(RoundRequest, SizeDoesNotGrowWithTheRound) {
  const std::size_t r12 = round_message(12).size(), r40 = round_message(40).size();
  // Round 40's attempts table has as many rows as round 12's (the first best and the latest 11);
  // only the step numbers' widths and the omitted count differ.
  EXPECT_LE(r40, r12 + 200) << r12 << " vs " << r40;
  const std::string text = round_message(40);
  EXPECT_NE(text.find("The 28 oldest attempts that never became the best are left out."), std::string::npos) << text;
  EXPECT_NE(text.find("| r0.s0.a0 | kept (first correct)"), std::string::npos);  // the best's row stays
  EXPECT_NE(text.find("| r39.s0.a0 | rejected"), std::string::npos);
  EXPECT_EQ(text.find("| r28.s0.a0 |"), std::string::npos);
}

}  // namespace
}  // namespace kforge::loop

// A profile shown beside a verdict states the verdict's per-call times.
#include "profile/anchor.h"

#include <gtest/gtest.h>

#include "profile/analysis.h"
#include "profile/profiler.h"

namespace kforge::profile {
namespace {

using json = nlohmann::json;

// 16.8 MB moved at 108.4 GB/s measured (the swish problem on a CPU).
json cpu_sol(double candidate_pct) {
  return {{"flops", 0}, {"bytes", 16777216}, {"dtype", "float32"}, {"peak_flops_per_s", 327.7e9},
          {"bandwidth_bytes_per_s", 108.4e9}, {"sol_ms", 0.1548}, {"bound", "memory"},
          {"candidate_pct_of_sol", candidate_pct}};
}

json cpu_side(double profiled_ms, double host_us) {
  return {{"timing", {{"median_ms", profiled_ms}}},
          {"achieved", achieved(profiled_ms, cpu_sol(0))},
          {"torch_profiler", {{"kernels_per_call", 0}, {"wall_us_per_call", host_us}, {"threads", 2},
                              {"host_ops", json::array()}, {"host_ops_us_per_call", 0},
                              {"outside_torch_ops_us_per_call", host_us}}}};
}

// What the profiler returns for a CPU candidate: its own 8 timed calls (61.5 ms, 30.21 ms).
json cpu_profile() {
  json doc = {{"problem_name", "12_swish"}, {"target", "cpu"}, {"device_name", "Xeon"}, {"sol", cpu_sol(0)},
              {"sides", {{"candidate", cpu_side(61.5, 36700)}, {"reference", cpu_side(30.21, 53000)}}}};
  finish_profile(doc, {});
  return doc;
}

EvalView evaluation() {
  return EvalView::decode({{"sol", cpu_sol(0.502)},
          {"timing", {{"candidate", {{"median_ms", 30.83}, {"p25_ms", 28.01}}}, {"eager", {{"median_ms", 43.98}}},
                      {"compile", {{"median_ms", 43.44}}}}}});
}

TEST(AnchorToEvaluation, EveryPerCallTimeIsTheVerdictsOrLabelledAsTheProfilers) {
  json doc = cpu_profile();
  ASSERT_NE(doc["summary"].get<std::string>().find("Candidate: 61.5 ms per call"), std::string::npos);
  anchor_to_evaluation(doc, evaluation());
  const std::string text = doc["summary"];
  EXPECT_NE(text.find("Candidate: 30.83 ms per call (the evaluation's median, which the verdict uses), 0.5% of speed "
                      "of light"), std::string::npos) << text;
  EXPECT_NE(text.find("Reference (PyTorch eager): 43.98 ms per call (the evaluation's median"), std::string::npos) << text;
  EXPECT_EQ(text.find("61.5"), std::string::npos) << text;
  EXPECT_EQ(text.find("30.21"), std::string::npos) << text;
  // The bandwidth the limiter states is the evaluation's: 16.8 MB in 30.83 ms.
  EXPECT_NE(text.find("16.8 MB per call at 0.5442 GB/s"), std::string::npos) << text;
  // What only torch.profiler measures says so.
  EXPECT_NE(text.find("host time per call under torch.profiler 36.7 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("100% of the call (36.7 ms under torch.profiler) runs outside torch operators"),
            std::string::npos) << text;
  EXPECT_EQ(doc["sides"]["candidate"]["profiled_ms"], 61.5);
  EXPECT_EQ(doc["analysis"], doc["sides"]["candidate"]["analysis"]);
}

TEST(AnchorToEvaluation, AFailedProfileOrAnUntimedEvaluationIsLeftAsItIs) {
  json failed = {{"error", "the candidate failed"}};
  anchor_to_evaluation(failed, evaluation());
  EXPECT_EQ(failed, json({{"error", "the candidate failed"}}));
  json doc = cpu_profile();
  const json before = doc;
  anchor_to_evaluation(doc, EvalView::decode({{"status", "correct"}}));
  EXPECT_EQ(doc, before);
}

}  // namespace
}  // namespace kforge::profile

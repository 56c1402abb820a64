#include "loop/run_summary.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge::loop {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// A run as the loop stores it: a first correct candidate, its profile and analysis, a kept
// challenger that cites recommendation 1 and a rejected one that cites 2.
json stored_run(Store& store) {
  json options = {{"overrides", {{"batch_size", "64"}, {"dim", "4096"}}}, {"threads", 1}, {"seed", 7},
                  {"precision", "strict"}, {"rounds", 2}, {"samples", 2}, {"max_fix", 1}, {"patience", 2},
                  {"min_gain", 0.03}, {"eval_trials", 3}, {"eval_reps", 20}, {"eval_warmup", 2}};
  auto id = store.create_run("/p/23_softmax.py", "abc", "cpu", "replay:t.jsonl", options);
  json first_eager = {{"point", 0.80}, {"ci_low", 0.78}, {"ci_high", 0.83}};
  store.add_decision(id, 0, "r0.s0.a0", "correct", "s0", {{"status", "correct"}, {"summary", "correct"}, {"idea", "scalar rows"}});
  store.add_decision(id, 0, "r0.s0.a0", "accepted", "s0",
                     {{"reason", "first correct candidate"}, {"median_ms", 1.25}, {"vs_eager", first_eager},
                      {"beats_pytorch", false}, {"idea", "scalar rows"}});
  store.add_decision(id, 1, "r1.profile", "profile", "s0", {{"candidate", "r0.s0.a0"}, {"summary", "memory bound"}});
  store.add_decision(id, 1, "r1.analyze", "analysis", "s0",
                     {{"recommendations", {"Vectorise the row loop with AVX-512", "Use two accumulators"}}});
  json kept = {{"outcome", "kept"}, {"ratio", 2.4}, {"ci_low", 2.2}, {"ci_high", 2.6}, {"measurements", 1}};
  store.add_run_evaluation(id, "r1.s0.a0.eval",
                           {{"status", "correct"},
                            {"timing",
                             {{"candidate",
                               {{"median_ms", 0.52}, {"p25_ms", 0.5}, {"p75_ms", 0.55}, {"iqr_rel", 0.1}}}}}},
                           "");
  store.add_decision(id, 1, "r1.s0.a0", "accepted", "s1",
                     {{"reason", "faster than the best: 2.40x"}, {"median_ms", 0.52}, {"eval_step", "r1.s0.a0.eval"},
                      {"vs_eager", {{"point", 1.96}, {"ci_low", 1.90}, {"ci_high", 2.01}}},
                      {"vs_compile", {{"point", 1.10}, {"ci_low", 1.05}, {"ci_high", 1.16}}}, {"beats_pytorch", true},
                      {"keep", kept}, {"idea", "Recommendation 1: AVX-512 rows"}});
  json undecided = {{"outcome", "undecided"}, {"ratio", 1.01}, {"ci_low", 0.95}, {"ci_high", 1.07}, {"measurements", 3}};
  store.add_decision(id, 1, "r1.s1.a0", "quarantined", "s2", {{"flags", {"unstable"}}, {"reasons", {"iqr 40%"}}});
  store.add_decision(id, 1, "r1.s1.a0", "undecided", "s2",
                     {{"reason", "the interval contains 1 after 3 measurements"}, {"keep", undecided},
                      {"vs_eager", {{"point", 0.99}, {"ci_low", 0.9}, {"ci_high", 1.1}}},
                      {"idea", "recommendation 2: two accumulators"}});
  store.add_decision(id, 2, "run", "stop", "", {{"reason", "rounds"}, {"rounds", 2}});
  return build_summary(store, id);
}

}  // namespace

class RunSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("kforge-summary-test-"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunSummaryTest, OnlyCandidatesAreCandidateRows) {
  Store store(dir_ / "k.db");
  json s = stored_run(store);
  std::vector<std::string> steps;
  for (const auto& c : s["candidates"]) steps.push_back(c["step"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"r0.s0.a0", "r1.s0.a0", "r1.s1.a0"}));
  std::string report = markdown_report(s);
  EXPECT_EQ(report.find("r1.profile"), std::string::npos) << report;
  EXPECT_EQ(report.find("r1.analyze"), std::string::npos) << report;
}

TEST_F(RunSummaryTest, OneConsistentVerdictLine) {
  Store store(dir_ / "k.db");
  json s = stored_run(store);
  const std::string v = s["verdict"];
  EXPECT_EQ(v, "Best candidate r1.s0.a0: 0.52 ms, 1.96x [1.90, 2.01] vs PyTorch eager, 1.10x [1.05, 1.16] vs "
               "torch.compile (95% confidence intervals); no speed-of-light figure. It beats both PyTorch baselines "
               "beyond the noise.");
  EXPECT_EQ(count(v, "eager"), 1u) << v;
  EXPECT_DOUBLE_EQ(s["best"]["speedup_vs_eager"].get<double>(), 1.96);  // the same figure for tools
  EXPECT_DOUBLE_EQ(s["best_by_round"][1]["speedup_vs_eager"].get<double>(), 1.96);
}

TEST_F(RunSummaryTest, ReportSettingsAreComplete) {
  Store store(dir_ / "k.db");
  std::string report = markdown_report(stored_run(store));
  EXPECT_NE(report.find("| Size overrides (`--set`) | `batch_size=64`, `dim=4096` |"), std::string::npos) << report;
  EXPECT_NE(report.find("| Threads | 1 |"), std::string::npos);
  EXPECT_NE(report.find("| Seed | 7 |"), std::string::npos);
  EXPECT_NE(report.find("| Precision | strict |"), std::string::npos);
  // Every other setting of the run, defaults included, so the report alone says how it was run.
  EXPECT_NE(report.find("| Target | `cpu` on its default device |"), std::string::npos) << report;
  EXPECT_NE(report.find("| Search | 2 rounds, 2 sample(s) per round, up to 1 fixes, patience 2, min gain 3%, "
                        "stop at 90% of speed of light |"),
            std::string::npos);
  EXPECT_NE(report.find("| Budgets | tokens none, cost none, time none |"), std::string::npos);
  EXPECT_NE(report.find("| Checks | 3 trials, 0 varied size(s), library calls as the target allows, sandboxed |"),
            std::string::npos);
  EXPECT_NE(report.find("| Timing | 20 repetitions after 2 warm-up, timeout 120 s, torch.compile baseline on |"),
            std::string::npos);
  EXPECT_EQ(report.find("Ported from"), std::string::npos);  // no --transfer-from
}

TEST_F(RunSummaryTest, ReportSettingsNameWhatWasChanged) {
  Store store(dir_ / "k.db");
  json options = {{"device", "cuda:1"}, {"transfer_from", "/k/relu_cpu.py"}, {"temperature", 0.2},
                  {"max_tokens", 50000}, {"max_cost_usd", 1.5}, {"time_limit_s", 600}, {"shapes", 2},
                  {"kernels_only", true}, {"sandbox", false}, {"compile_only", true}};
  auto id = store.create_run("/p/1_relu.py", "abc", "triton", "manual:", options);
  std::string report = markdown_report(build_summary(store, id));
  EXPECT_NE(report.find("| Target | `triton` on `cuda:1` |"), std::string::npos) << report;
  EXPECT_NE(report.find("| Ported from (`--transfer-from`) | `/k/relu_cpu.py` |"), std::string::npos);
  EXPECT_NE(report.find("| Model | `manual:`, temperature 0.2 |"), std::string::npos);
  EXPECT_NE(report.find("| Budgets | tokens 50000, cost $1.50, time 600 s |"), std::string::npos);
  EXPECT_NE(report.find("2 varied size(s), library calls none (`--kernels-only`), not sandboxed (`--no-sandbox`) |"),
            std::string::npos);
  EXPECT_NE(report.find("| Timing | none (`--compile-only`: the target's interpreter) |"), std::string::npos);
}

TEST_F(RunSummaryTest, TimesComeWithTheirSpread) {
  Store store(dir_ / "k.db");
  json s = stored_run(store);
  std::string report = markdown_report(s);
  EXPECT_NE(report.find("| 1 | r1.s0.a0 | 0.52 (0.5-0.55) | 1.96x |"), std::string::npos) << report;  // best by round
  EXPECT_NE(report.find("| 1 | r1.s0.a0 | correct | 0.52 (0.5-0.55) | 1.96x [1.90, 2.01] |"), std::string::npos)
      << report;
  // No evaluation stored for it: the median alone.
  EXPECT_NE(report.find("| 0 | r0.s0.a0 | correct | 1.25 |"), std::string::npos) << report;
  EXPECT_DOUBLE_EQ(s["best"]["timing_spread"]["p75_ms"].get<double>(), 0.55);
}

TEST_F(RunSummaryTest, ReportShowsWhichAdvicePaidOff) {
  Store store(dir_ / "k.db");
  json s = stored_run(store);
  std::string report = markdown_report(s);
  EXPECT_NE(report.find("## Which advice paid off"), std::string::npos) << report;
  EXPECT_NE(report.find("| 1 | 1 | Vectorise the row loop with AVX-512 | r1.s0.a0 (accepted, 2.40x [2.20, 2.60] vs best) | yes |"),
            std::string::npos) << report;
  EXPECT_NE(report.find("| 1 | 2 | Use two accumulators | r1.s1.a0 (undecided, 1.01x [0.95, 1.07] vs best) | no |"),
            std::string::npos) << report;
  // The undecided candidate's row carries its flag and its interval against the best.
  EXPECT_NE(report.find("[unstable]"), std::string::npos);
  EXPECT_NE(report.find("undecided: the interval contains 1"), std::string::npos);
}

TEST_F(RunSummaryTest, NoCorrectCandidateSaysKeepPyTorch) {
  EXPECT_EQ(verdict_text(json{{"best", nullptr}}), "No correct candidate was found. Keep using the PyTorch reference.");
}

TEST_F(RunSummaryTest, AnUntimedRunSaysNoSpeedWasMeasured) {
  // --compile-only in an interpreter: the best is correct, with no timing at all.
  json best = {{"step", "r0.s0.a0"}, {"median_ms", nullptr}, {"vs_eager", nullptr}, {"vs_compile", nullptr},
               {"beats_pytorch", false}};
  const std::string v = verdict_text(json{{"best", best}, {"options", {{"compile_only", true}}}});
  EXPECT_NE(v.find("No speed was measured"), std::string::npos) << v;
  EXPECT_NE(v.find("--compile-only"), std::string::npos) << v;
  EXPECT_EQ(v.find("does not beat"), std::string::npos) << v;
  EXPECT_EQ(v.find("Keep using PyTorch"), std::string::npos) << v;
  EXPECT_EQ(v.find(" ms"), std::string::npos) << v;
  const std::string untimed = verdict_text(json{{"best", best}, {"options", {{"timing", false}}}});
  EXPECT_NE(untimed.find("No speed was measured"), std::string::npos) << untimed;
}

TEST_F(RunSummaryTest, TheVerdictNamesTheLibraryCallsTheBestKeeps) {
  json best = {{"step", "r1.s0.a0"}, {"median_ms", 0.5}, {"vs_eager", {{"point", 1.4}, {"low", 1.3}, {"high", 1.5}}},
               {"beats_pytorch", true}, {"library_calls", {{"operators", {"matmul"}}, {"share", 0.81}}}};
  const std::string v = verdict_text(json{{"best", best}});
  EXPECT_NE(v.find("It keeps library calls the target allows: matmul (81% of the candidate's time)."),
            std::string::npos) << v;
  best.erase("library_calls");
  EXPECT_EQ(verdict_text(json{{"best", best}}).find("library"), std::string::npos);
}

}  // namespace kforge::loop

namespace kforge::loop {

// Why a round's analysis had no Nsight Compute metrics, and how large each request was, are in the
// summary and the report, not only in the prompt.
TEST_F(RunSummaryTest, ProfilesWithoutNcuMetricsAndRequestSizesAreReported) {
  Store store(dir_ / "k.db");
  auto id = store.create_run("/p/1_gemm.py", "abc", "cuda", "replay:t.jsonl", json::object());
  const std::string note = "Nsight Compute gave no profile: nsight-compute directory is not found";
  store.add_decision(id, 1, "r1.profile", "profile", "s0",
                     {{"candidate", "r0.s0.a0"}, {"ncu", {{"status", "failed"}, {"note", note}}}});
  auto request = [](std::size_t chars) {
    return json{{"messages", json::array({{{"role", "system"}, {"content", json::array({{{"type", "text"}, {"text", std::string(100, 's')}}})}},
                                          {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", std::string(chars, 'u')}}})}}})}};
  };
  store.add_llm_call(id, "r0.s0.a0.gen", request(14000), {{"text", "x"}});
  store.add_llm_call(id, "r1.analyze", request(9000), {{"text", "x"}});
  store.add_llm_call(id, "r1.s0.a0.gen", request(15000), {{"text", "x"}});
  json s = build_summary(store, id);
  ASSERT_EQ(s["profiles"].size(), 1u);
  EXPECT_EQ(s["profiles"][0]["ncu"]["note"], note);
  ASSERT_EQ(s["request_sizes"].size(), 3u);
  EXPECT_EQ(s["request_sizes"][0]["chars"], 14100);
  EXPECT_EQ(s["request_sizes"][0]["messages"], 2);
  const std::string report = markdown_report(s);
  EXPECT_NE(report.find("| Profile r1.profile | no Nsight Compute metrics: " + note + " |"), std::string::npos) << report;
  EXPECT_NE(report.find("| Request sizes | generation r0 14.1 kB, r1 15.1 kB; analysis up to 9.1 kB |"), std::string::npos)
      << report;
}

}  // namespace kforge::loop

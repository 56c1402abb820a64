// The replay text of the bundled prompts: the same on two machines, different for another problem.
#include "loop/unmeasured_context.h"

#include <gtest/gtest.h>

#include "agent/prompt_renderer.h"

namespace kforge::loop {
namespace {

using json = nlohmann::json;

json timing(double candidate_ms, double eager_ms, int threads) {
  auto row = [](double m) { return json{{"median_ms", m}, {"p25_ms", m * 0.9}, {"p75_ms", m * 1.2}}; };
  return {{"threads", threads},
          {"candidate", row(candidate_ms)},
          {"eager", row(eager_ms)},
          {"compile", row(eager_ms * 0.8)}};
}

json history(const std::string& best_verdict, const std::string& vs_best) {
  return json::array({{{"step", "r0.s0.a0"},
                       {"verdict", best_verdict},
                       {"decision", "kept (first correct)"},
                       {"vs_eager", "1.10x [1.02, 1.20]"},
                       {"vs_compile", "-"},
                       {"vs_best", "-"},
                       {"idea", "scalar loop"}},
                      {{"step", "r1.s0.a0"},
                       {"verdict", "rejected"},
                       {"decision", "rejected"},
                       {"vs_eager", "0.90x"},
                       {"vs_compile", "-"},
                       {"vs_best", vs_best},
                       {"idea", "unrolled by 4"}}});
}

// The analysis context of one machine: its timings, threads, flags, profile and decision reasons.
json analysis_on(int machine, const std::string& reference = "x * sigmoid(x)") {
  const bool first = machine == 0;
  json ctx = {{"problem_name", "12_swish"},
              {"target", {{"name", "cpu"}}},
              {"reference", reference},
              {"shapes", "- forward input 0: float32 tensor [64, 32768]"},
              {"candidate", {{"step", "r0.s0.a0"}, {"source", "class ModelNew: ..."}}},
              {"timing", timing(first ? 2.5 : 7.25, first ? 4.0 : 9.5, first ? 2 : 16)},
              {"speedup_vs_eager", first ? "1.60x [1.50, 1.70]" : "1.31x [1.10, 1.40]"},
              {"sol", first ? "memory-bound: 16 MB at 13.7 GB/s" : "memory-bound: 16 MB at 41.2 GB/s"},
              {"profile", first ? "limiter 2: aten::sigmoid takes 61%" : "limiter 2: aten::mul takes 48%"},
              {"latest",
               {{"step", "r1.s0.a0"},
                {"verdict", "rejected"},
                {"direction", "against the best r0.s0.a0"},
                {"reason", first ? "slower than the best: 0.80x" : "slower than the best: 0.70x"},
                {"diff", "-a\n+b"}}},
              {"history", history(first ? "kept (first correct), unstable" : "kept (first correct)",
                                  first ? "0.80x [0.70, 0.90]" : "0.70x [0.60, 0.75]")},
              {"has_history", true}};
  if (first) ctx["flags"] = "interquartile range 56% of the median, above 15%";
  return ctx;
}

agent::PromptLibrary prompts() {
  return agent::PromptLibrary::load(std::filesystem::path(KFORGE_SOURCE_DIR) / "prompts");
}

TEST(UnmeasuredContext, TwoMachinesRenderTheSameReplayTextForTheSameQuestion) {
  auto lib = prompts();
  const json a = analysis_on(0), b = analysis_on(1);
  ASSERT_NE(lib.render("analyze.user", a), lib.render("analyze.user", b));  // what the model sees differs
  const std::string text = lib.render("analyze.user", unmeasured_context(a));
  EXPECT_EQ(text, lib.render("analyze.user", unmeasured_context(b)));
  // What was measured is gone; what was asked stays, including which baselines were timed.
  for (const char* gone : {"aten::", "GB/s", "0.80x", "1.60x", "unstable", "interquartile", "16 threads", "2 threads"})
    EXPECT_EQ(text.find(gone), std::string::npos) << gone << "\n" << text;
  for (const char* kept :
       {"x * sigmoid(x)", "float32 tensor [64, 32768]", "| torch.compile | <measured> ms", "## Profile of the best",
        "The latest attempt: r1.s0.a0 (rejected)", "| r1.s0.a0 | rejected |", "scalar loop", "-a\n+b"})
    EXPECT_NE(text.find(kept), std::string::npos) << kept << "\n" << text;
}

TEST(UnmeasuredContext, AnotherProblemOrDecisionStillChangesTheReplayText) {
  auto lib = prompts();
  const std::string base = lib.render("analyze.user", unmeasured_context(analysis_on(0)));
  EXPECT_NE(base, lib.render("analyze.user", unmeasured_context(analysis_on(0, "x * torch.tanh(x)"))));
  json undecided = analysis_on(0);
  undecided["latest"]["verdict"] = "undecided";
  EXPECT_NE(base, lib.render("analyze.user", unmeasured_context(undecided)));
  json no_compile = analysis_on(0);  // --no-compile-baseline asks another question
  no_compile["timing"].erase("compile");
  EXPECT_NE(base, lib.render("analyze.user", unmeasured_context(no_compile)));
}

TEST(UnmeasuredContext, RoundMessageKeepsTheBestAndTheAdviceButNotTheRatios) {
  auto lib = prompts();
  auto round = [](int machine) {
    json ctx = analysis_on(machine);
    ctx["round"] = 2;
    ctx["best"] = {{"step", "r0.s0.a0"},
                   {"source", "class ModelNew: ..."},
                   {"show_source", true},
                   {"vs_eager", machine ? "1.31x [1.10, 1.40]" : "1.60x [1.50, 1.70]"}};
    ctx["rejected"] = {
        {"step", "r1.s0.a0"}, {"verdict", "rejected"}, {"reason", ctx["latest"]["reason"]}, {"diff", "-a\n+b"}};
    ctx["recommendations"] = json::array({{{"rank", 1}, {"text", "use AVX-512"}}});
    ctx["has_recommendations"] = true;
    return ctx;
  };
  const std::string text = lib.render("generate.round", unmeasured_context(round(0)));
  EXPECT_EQ(text, lib.render("generate.round", unmeasured_context(round(1))));
  EXPECT_NE(text.find("## Current best candidate (r0.s0.a0): <measured> vs PyTorch eager"), std::string::npos) << text;
  EXPECT_NE(text.find("1. use AVX-512"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.60x"), std::string::npos) << text;
}

}  // namespace
}  // namespace kforge::loop

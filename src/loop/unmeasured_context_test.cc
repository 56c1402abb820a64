// The replay text of the bundled prompts: the same on two machines, different for another problem.
#include "loop/unmeasured_context.h"

#include <gtest/gtest.h>

#include "agent/prompt_renderer.h"
#include "llm/normalize.h"
#include "loop/attempt_history.h"

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
        "The latest attempt: r1.s0.a0 (not kept)", "| r1.s0.a0 | not kept |", "scalar loop", "-a\n+b"})
    EXPECT_NE(text.find(kept), std::string::npos) << kept << "\n" << text;
}

TEST(UnmeasuredContext, AnotherProblemOrDecisionStillChangesTheReplayText) {
  auto lib = prompts();
  const std::string base = lib.render("analyze.user", unmeasured_context(analysis_on(0)));
  EXPECT_NE(base, lib.render("analyze.user", unmeasured_context(analysis_on(0, "x * torch.tanh(x)"))));
  json kept = analysis_on(0);  // the latest attempt became the best: another question
  kept["latest"]["verdict"] = "kept";
  kept["latest"]["direction"] = "from the previous best r0.s0.a0";
  EXPECT_NE(base, lib.render("analyze.user", unmeasured_context(kept)));
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

// One run's attempts as two machines measured them: the same candidates and the same best, but other
// timings, other measurement flags, and the slower variant's interval below 1 on one machine
// (rejected) and around 1 on the other (undecided).
struct Machine {
  double scale;                    // how much slower than the first machine
  std::vector<std::string> flags;  // what its re-measurements left flagged
  std::string variant_verdict;     // rejected or undecided
  Ratio variant_vs_best;
  bool sol_available, profile_taken;
};

const Machine kQuiet{1.0, {}, "rejected", {0.41, 0.29, 0.72}, true, true};
const Machine kLoaded{3.7, {"over_bound", "unstable"}, "undecided", {0.86, 0.61, 1.08}, false, false};

std::vector<AttemptRecord> attempts(const Machine& m) {
  auto r = [&](double point) { return Ratio{point / m.scale, point / m.scale * 0.8, point / m.scale * 1.3}; };
  return {{"r0.s0.a0", 0, "kept (first correct)", r(0.05), std::nullopt, std::nullopt, m.flags, "scalar loop"},
          {"r1.s0.a0", 1, "kept", r(0.9), std::nullopt, Ratio{19.1 * m.scale, 5.0, 20.0}, m.flags, "unit stride"},
          {"r2.s0.a0", 2, m.variant_verdict, r(0.3), std::nullopt, m.variant_vs_best, {"unstable"}, "tiles"},
          {"r2.s0.a1", 2, "compile_error", std::nullopt, std::nullopt, std::nullopt, {}, "typo"}};
}

json round3_context(const Machine& m, const std::string& shapes = "- forward input 0: float32 tensor [4, 64, 64, 64]") {
  json ctx = {{"problem_name", "36_RMSNorm_"},
              {"target", {{"name", "cpu"}, {"description", "C++ kernels on the host CPU"}, {"language", "C++"}}},
              {"reference", "x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)"},
              {"shapes", shapes},
              {"history", history_rows(attempts(m))},
              {"has_history", true}};
  const std::string reason = m.variant_verdict == "rejected"
                                 ? "slower than the best: 0.41x, 95% CI [0.29, 0.72] over 3 rounds"
                                 : "no difference beyond the noise after 3 measurements";
  json analysis = ctx;
  analysis["candidate"] = {{"step", "r1.s0.a0"}, {"source", "class ModelNew: ... unit stride"}};
  analysis["timing"] = timing(0.75 * m.scale, 0.6 * m.scale, m.scale > 1 ? 1 : 2);
  analysis["speedup_vs_eager"] = Ratio{0.8 / m.scale, 0.7 / m.scale, 0.9 / m.scale}.text();
  if (!m.flags.empty()) analysis["flags"] = "interquartile range 496% of the median, above 15%";
  if (m.sol_available)
    analysis["sol"] = "- bound: memory-bound, speed of light 0.42 ms\n- this candidate: 178% of speed of light\n";
  analysis["profile_requested"] = true;
  if (m.profile_taken) analysis["profile"] = "limiter 1: the feature loop takes 71%";
  analysis["latest"] = {{"step", "r2.s0.a0"},
                        {"verdict", m.variant_verdict},
                        {"reason", reason},
                        {"direction", "against the best r1.s0.a0"},
                        {"diff", "-acc[s]\n+tile[s]"}};
  json round = ctx;
  round["round"] = 3;
  round["best"] = {{"step", "r1.s0.a0"},
                   {"source", "class ModelNew: ... unit stride"},
                   {"show_source", false},
                   {"vs_eager", Ratio{0.8 / m.scale, 0.7 / m.scale, 0.9 / m.scale}.text()}};
  round["rejected"] = {
      {"step", "r2.s0.a0"}, {"verdict", m.variant_verdict}, {"reason", reason}, {"diff", "-acc[s]\n+tile[s]"}};
  round["recommendations"] = json::array({{{"rank", 1}, {"text", "keep the unit-stride streams"}}});
  round["has_recommendations"] = true;
  return {{"analysis", analysis}, {"round", round}};
}

// The requests of round 3 as the loop builds them: the analysis, and the generation conversation with
// the round's message last.
std::pair<llm::Request, llm::Request> round3_requests(const json& ctx) {
  auto lib = prompts();
  llm::Request analysis, generation;
  analysis.messages = {prompt_message(lib, llm::Role::kSystem, "analyze.system", ctx["analysis"]),
                       prompt_message(lib, llm::Role::kUser, "analyze.user", ctx["analysis"])};
  generation.messages = {prompt_message(lib, llm::Role::kSystem, "generate.system", ctx["round"]),
                         prompt_message(lib, llm::Role::kUser, "generate.user", ctx["round"]),
                         llm::Message::text(llm::Role::kAssistant, "class ModelNew: ... unit stride"),
                         prompt_message(lib, llm::Role::kUser, "generate.round", ctx["round"])};
  return {analysis, generation};
}

TEST(UnmeasuredContext, OtherTimingsFlagsAndIntervalsGiveTheSameReplayKey) {
  const auto [quiet_analysis, quiet_round] = round3_requests(round3_context(kQuiet));
  const auto [loaded_analysis, loaded_round] = round3_requests(round3_context(kLoaded));
  // What the model sees differs: timings, flags, the verdict words, speed of light, profile.
  const std::string loaded_text = loaded_analysis.messages[1].joined_text();
  ASSERT_NE(quiet_analysis.messages[1].joined_text(), loaded_text);
  for (const char* seen : {"over_bound", "unstable", "undecided", "Measurement warning"})
    ASSERT_NE(loaded_text.find(seen), std::string::npos) << seen;
  ASSERT_NE(quiet_round.messages.back().joined_text(), loaded_round.messages.back().joined_text());

  EXPECT_EQ(llm::request_key(quiet_analysis), llm::request_key(loaded_analysis))
      << llm::describe_difference(llm::normalized_request(quiet_analysis), llm::normalized_request(loaded_analysis));
  EXPECT_EQ(llm::request_key(quiet_round), llm::request_key(loaded_round))
      << llm::describe_difference(llm::normalized_request(quiet_round), llm::normalized_request(loaded_round));
  // Nothing machine-dependent is left in what the key is computed from.
  for (const auto* request : {&loaded_analysis, &loaded_round}) {
    const std::string keyed = llm::normalized_request(*request);
    for (const char* gone : {"over_bound", "unstable", "undecided", "rejected", "Measurement warning", "178%",
                             "limiter", "No profile", "No speed-of-light", "CI [", "(1 threads)", "(2 threads)"})
      EXPECT_EQ(keyed.find(gone), std::string::npos) << gone << "\n" << keyed;
    for (const char* kept : {"| r1.s0.a0 | kept |", "| r2.s0.a0 | not kept |", "| r2.s0.a1 | compile_error |",
                             "float32 tensor [4, 64, 64, 64]", "+tile[s]"})
      EXPECT_NE(keyed.find(kept), std::string::npos) << kept << "\n" << keyed;
  }
}

TEST(UnmeasuredContext, AnotherSizeOrAnotherBestStillChangesTheReplayKey) {
  const auto [analysis, round] = round3_requests(round3_context(kQuiet));
  const auto [resized_analysis, resized_round] =
      round3_requests(round3_context(kQuiet, "- forward input 0: float32 tensor [8, 64, 64, 64]"));
  EXPECT_NE(llm::request_key(analysis), llm::request_key(resized_analysis));
  EXPECT_NE(llm::request_key(round), llm::request_key(resized_round));

  json kept = round3_context(kQuiet);  // the variant became the best on this machine: other prompts
  kept["round"]["history"][2]["decision"] = "kept";
  kept["round"]["history"][2]["verdict"] = "kept";
  kept["round"]["best"]["step"] = "r2.s0.a0";
  kept["round"].erase("rejected");
  EXPECT_NE(llm::request_key(round), llm::request_key(round3_requests(kept).second));
}

}  // namespace
}  // namespace kforge::loop

#include "eval/eval_view.h"

#include <gtest/gtest.h>

#include "eval/eval_result.h"
#include "eval/speed_claim.h"
#include "eval/timing_stats.h"

namespace kforge {
namespace {

using json = nlohmann::json;

TEST(EvalView, DecodesWhatTheEvaluatorWrites) {
  nlohmann::json doc = {{"status", "correct"},
                        {"target", "cpu"},
                        {"correctness", {{"trials", 5}, {"trials_passed", 5}, {"max_abs_error", 1e-6},
                                         {"shapes_checked", nlohmann::json::array({{{"tag", "main"}}})}}},
                        {"checks", {{{"name", "file_io"}, {"verdict", "pass"}, {"message", "m"}}}},
                        {"timing", {{"threads", 2}, {"candidate", to_json(summarize({1, 2, 3}))},
                                    {"eager", to_json(summarize({4, 5, 6}))}}},
                        {"speedup_vs_eager", 2.5},
                        {"speedup_vs_compile", nullptr},
                        {"notes", {"n1"}},
                        {"library_calls", {{"operators", {"matmul"}}, {"share", 0.75}}}};
  EvalView v = EvalView::decode(doc);
  EXPECT_EQ(v.status, "correct");
  EXPECT_TRUE(v.correctness.ran);
  EXPECT_EQ(v.correctness.trials_passed, 5);
  EXPECT_EQ(v.correctness.shapes_checked, 1);
  ASSERT_EQ(v.checks.size(), 1u);
  EXPECT_EQ(v.checks[0].name, "file_io");
  ASSERT_TRUE(v.timing);
  EXPECT_DOUBLE_EQ(v.timing->candidate->median_ms, 2);
  EXPECT_DOUBLE_EQ(v.timing->eager->p75_ms, 5.5);
  EXPECT_FALSE(v.timing->compile);
  EXPECT_EQ(v.timing->threads, 2);
  EXPECT_EQ(v.speedup_vs_eager, 2.5);
  EXPECT_FALSE(v.speedup_vs_compile);
  EXPECT_FALSE(v.error);
  EXPECT_EQ(v.notes, std::vector<std::string>{"n1"});
  ASSERT_TRUE(v.library_calls);
  EXPECT_EQ(v.library_calls->operators, std::vector<std::string>{"matmul"});
  EXPECT_EQ(v.library_calls->share, 0.75);
}

TEST(EvalView, AFailedEvaluationHasAnErrorAndNoTiming) {
  EvalView v = EvalView::decode({{"status", "compile_error"},
                                 {"error", {{"kind", "compile_error"}, {"message", "nvcc failed"}}},
                                 {"correctness", {{"trials", 0}}}});
  ASSERT_TRUE(v.error);
  EXPECT_EQ(v.error->message, "nvcc failed");
  EXPECT_FALSE(v.correctness.ran);
  EXPECT_FALSE(v.timing);
}

TEST(EvalView, AMismatchKeepsTheCheckersFiguresAsWritten) {
  EvalView v = EvalView::decode(
      {{"status", "incorrect"},
       {"correctness",
        {{"trials", 1},
         {"trials_passed", 0},
         {"mismatch",
          {{"message", "1 element"}, {"path", "output"}, {"index", {3, 7}}, {"mismatched", 1}, {"got", 1.5}}}}}});
  ASSERT_TRUE(v.correctness.mismatch);
  EXPECT_EQ(v.correctness.mismatch->message, "1 element");
  EXPECT_EQ(v.correctness.mismatch->path, "output");
  EXPECT_EQ(v.correctness.mismatch->index, json({3, 7}));
  EXPECT_TRUE(v.correctness.mismatch->mismatched.is_number_integer());
  EXPECT_TRUE(v.correctness.mismatch->expected.is_null());  // absent
}

TEST(EvalView, AbsentAndNullPartsReadAsNotThere) {
  EvalView v = EvalView::decode({{"status", "runtime_error"}, {"speedup_vs_eager", nullptr}, {"speed_class", nullptr},
                                 {"sol", nullptr}, {"memory", json::object()}, {"timing", {{"eager", {{"p25_ms", 1.0}}}}}});
  EXPECT_FALSE(v.speedup_vs_eager);
  EXPECT_FALSE(v.speed_class);
  EXPECT_FALSE(v.sol);
  EXPECT_FALSE(v.memory);
  EXPECT_FALSE(v.torch);
  EXPECT_FALSE(v.library_calls);
  EXPECT_FALSE(v.timing);  // the candidate was not timed...
  ASSERT_TRUE(v.recorded.eager);  // ...but its baseline's spread is still there
  EXPECT_EQ(v.recorded.eager->p25_ms, 1.0);
  EXPECT_TRUE(EvalView::decode(json()).status.empty());
}

// The bound's description (loop/problem_facts.h) and the profile (profile/anchor.h) read the sol
// figures and routes decoded; the bound's words and the profile keep the object as written.
TEST(EvalView, TheBoundIsDecodedAndKeptAsWritten) {
  const json sol = {{"sol_ms", 0.08}, {"bound", "compute"}, {"bytes", 805306368}, {"bandwidth_bytes_per_s", 4.658e12},
                    {"flops", 1099511627776}, {"peak_flops_per_s", 1.4e14}, {"eager_pct_of_sol", 12.0},
                    {"note", "peaks re-measured"}, {"route", "3xTF32"},
                    {"routes", {{{"route", "float32"}, {"peak_flops_per_s", 5.06e13}}, {{"route", "3xTF32"}, {"peak_flops_per_s", nullptr}}}}};
  EvalView v = EvalView::decode({{"status", "correct"}, {"sol", sol}, {"timing", {{"threads", 4}, {"eager", {{"median_ms", 1.0}}}}},
                                 {"library_calls", {{"operators", {"mm"}}, {"share", 0.5}, {"measured_by", "torch.profiler"}}}});
  ASSERT_TRUE(v.sol);
  EXPECT_EQ(v.sol->bound, "compute");
  EXPECT_EQ(v.sol->bytes, 805306368.0);
  EXPECT_EQ(v.sol->bandwidth_bytes_per_s, 4.658e12);
  EXPECT_EQ(v.sol->eager_pct_of_sol, 12.0);
  EXPECT_EQ(v.sol->note, "peaks re-measured");
  ASSERT_EQ(v.sol->routes.size(), 2u);
  EXPECT_EQ(v.sol->routes[0].route, "float32");
  EXPECT_EQ(v.sol->routes[0].peak_flops_per_s, 5.06e13);
  EXPECT_FALSE(v.sol->routes[1].peak_flops_per_s);
  EXPECT_EQ(v.sol->as_written, sol);
  EXPECT_EQ(v.recorded.threads, 4);  // recorded whether or not the candidate was timed
  EXPECT_FALSE(v.timing);
  ASSERT_TRUE(v.library_calls);
  EXPECT_EQ(v.library_calls->as_written["measured_by"], "torch.profiler");
  EXPECT_FALSE(EvalView::decode({{"status", "correct"}}).recorded.threads);
}

// The store looks evaluations up by what was evaluated and where.
TEST(EvalView, ProvenanceIsDecoded) {
  EvalView v = EvalView::decode({{"status", "correct"}, {"problem", "/p/relu.py"}, {"problem_sha256", "aa"},
                                 {"candidate_sha256", "bb"}, {"target", "cuda"}, {"device", "cuda:0"}});
  EXPECT_EQ(v.problem, "/p/relu.py");
  EXPECT_EQ(v.problem_sha256, "aa");
  EXPECT_EQ(v.candidate_sha256, "bb");
  EXPECT_EQ(v.device, "cuda:0");
  EXPECT_TRUE(EvalView::decode({{"status", "correct"}}).candidate_sha256.empty());
}

// A head-to-head keeps each contender's `error` object; its message is read through the decoder.
TEST(EvalView, AnErrorObjectDecodesOnItsOwn) {
  EXPECT_FALSE(decode_error(json()));
  EXPECT_FALSE(decode_error(json::object()));
  const auto e = decode_error({{"kind", "runtime_error"}, {"message", "CUDA error: illegal memory access"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "runtime_error");
  EXPECT_EQ(e->message, "CUDA error: illegal memory access");
  EXPECT_THROW(decode_error("it failed"), EvalResultError);
  try {
    decode_error({{"message", 3}});
    FAIL() << "no error";
  } catch (const EvalResultError& err) {
    EXPECT_STREQ(err.what(), "EvalResult field `error.message` is number, expected a string");
  }
}

// A field of the wrong type is named, whatever depth it sits at.
TEST(EvalView, AMalformedFieldIsNamed) {
  const auto error_of = [](const json& doc) {
    try {
      EvalView::decode(doc);
    } catch (const EvalResultError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"status", 3}}), "EvalResult field `status` is number, expected a string");
  EXPECT_EQ(error_of({{"timing", {{"candidate", {{"median_ms", "fast"}}}}}}),
            "EvalResult field `timing.candidate.median_ms` is string, expected a number");
  EXPECT_EQ(error_of({{"checks", {{{"name", "a"}}, 7}}}), "EvalResult field `checks[1]` is number, expected an object");
  EXPECT_EQ(error_of({{"checks", {{{"name", "a"}}, {{"verdict", false}}}}}),
            "EvalResult field `checks[1].verdict` is boolean, expected a string");
  EXPECT_EQ(error_of({{"memory", {{"retries", {{{"status", 1}}}}}}}),
            "EvalResult field `memory.retries[0].status` is number, expected a string");
  EXPECT_EQ(error_of({{"library_calls", {{"operators", {"matmul", 2}}}}}),
            "EvalResult field `library_calls.operators[1]` is number, expected a string");
  EXPECT_EQ(error_of({{"correctness", "all good"}}), "EvalResult field `correctness` is string, expected an object");
  EXPECT_EQ(error_of({{"sol", {{"routes", {{{"route", 5}}}}}}}), "EvalResult field `sol.routes[0].route` is number, expected a string");
}

// The readers built on the decoder give what they gave when they read the keys themselves.
TEST(EvalView, SpreadAndClaimReadThroughTheDecoder) {
  json doc = {{"status", "correct"},
              {"timing", {{"candidate", {{"median_ms", 2.0}, {"p25_ms", 1.5}, {"p75_ms", 2.5}, {"iqr_rel", 0.5}}},
                          {"eager", {{"median_ms", 4.0}, {"p25_ms", 3.9}, {"p75_ms", 4.1}, {"iqr_rel", 0.05}}}}},
              {"speedup_vs_eager", 2.0},
              {"speedup", {{"vs_eager", {{"point", 1.9}, {"ci_low", 1.7}, {"ci_high", 2.1}, {"rounds", 5}}}}},
              {"sol", {{"sol_ms", 1.0}}}};
  EXPECT_EQ(timing_spread(doc), json({{"candidate", {{"p25_ms", 1.5}, {"p75_ms", 2.5}, {"iqr_rel", 0.5}}},
                                      {"eager", {{"p25_ms", 3.9}, {"p75_ms", 4.1}, {"iqr_rel", 0.05}}}}));
  EXPECT_EQ(max_iqr_rel(doc), 0.5);
  const SpeedClaim claim = speed_claim(doc);
  ASSERT_TRUE(claim.vs_eager);
  EXPECT_EQ(claim.vs_eager->point, 1.9);
  EXPECT_EQ(claim.vs_eager->rounds, 5);
  EXPECT_EQ(claim.sol_fraction, 0.5);  // the bound over the candidate's median
  EXPECT_EQ(claim.verdict, SpeedVerdictKind::kFaster);
}

}  // namespace
}  // namespace kforge

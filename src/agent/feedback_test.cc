#include "agent/feedback.h"

#include <gtest/gtest.h>

#include "eval/eval_view.h"

namespace kforge::agent {
namespace {

using json = nlohmann::json;

TEST(Feedback, CompileErrorsAreQuotedVerbatim) {
  json doc = {{"status", "compile_error"},
              {"error",
               {{"kind", "compile_error"},
                {"message", "C++ compilation failed (exit 1): relu.cpp:5:40: error: 'zero' was not declared in this scope"},
                {"log", "relu.cpp: In function 'void relu(const float*, float*, int64_t)':\n"
                        "relu.cpp:5:40: error: 'zero' was not declared in this scope\n"
                        "    5 |     y[i] = x[i] > 0.0f ? x[i] : zero;\n"}}}};
  std::string f = functional_feedback(doc);
  EXPECT_NE(f.find("relu.cpp:5:40: error: 'zero' was not declared in this scope\n"), std::string::npos) << f;
  EXPECT_NE(f.find("    5 |     y[i] = x[i] > 0.0f ? x[i] : zero;"), std::string::npos);
  EXPECT_EQ(one_line_summary(doc), "compile_error: relu.cpp:5:40: error: 'zero' was not declared in this scope");
}

TEST(Feedback, MismatchNamesOutputErrorIndexAndShape) {
  json doc = {{"status", "incorrect"},
              {"error", {{"kind", "mismatch"}, {"message", "trial 0: output: 1 of 4194304 elements outside tolerance"}}},
              {"correctness",
               {{"mismatch",
                 {{"path", "output"}, {"reason", "value"}, {"max_abs_error", 1.0}, {"index", {3, 12345}},
                  {"shape", {64, 65536}}, {"expected", 0.25}, {"got", 1.25}, {"mismatched", 1}, {"atol", 1e-4},
                  {"trial", 0}, {"shape_tag", "main"}}}}}};
  std::string f = functional_feedback(doc);
  EXPECT_NE(f.find("- output: `output`"), std::string::npos) << f;
  EXPECT_NE(f.find("- max abs error: 1\n"), std::string::npos);
  EXPECT_NE(f.find("- worst index: [3, 12345]"), std::string::npos);
  EXPECT_NE(f.find("- shape: [64, 65536]"), std::string::npos);
  EXPECT_NE(f.find("expected 0.25, got 1.25"), std::string::npos);
  EXPECT_EQ(f.find("size variant"), std::string::npos);
}

TEST(Feedback, FailedChecksAreNamed) {
  json doc = {{"status", "rejected"},
              {"error", {{"kind", "input_mutation"}, {"message", "the candidate changed its inputs"}}},
              {"checks", {{{"name", "timing_crosscheck"}, {"verdict", "pass"}, {"message", "ok"}},
                          {{"name", "input_mutation"}, {"verdict", "fail"}, {"message", "x was modified in place"}}}}};
  std::string f = functional_feedback(doc);
  EXPECT_NE(f.find("- check `input_mutation` failed: x was modified in place"), std::string::npos) << f;
  EXPECT_EQ(f.find("timing_crosscheck"), std::string::npos);
}

TEST(Feedback, RuntimeErrorsKeepTheEndOfTheTraceback) {
  std::string log;
  for (int i = 0; i < 40; ++i) log += "frame " + std::to_string(i) + "\n";
  log += "RuntimeError: boom\n";
  json doc = {{"status", "runtime_error"}, {"error", {{"kind", "runtime_error"}, {"message", "trial 0 failed: boom"}, {"log", log}}}};
  std::string f = functional_feedback(doc);
  EXPECT_NE(f.find("RuntimeError: boom"), std::string::npos);
  EXPECT_EQ(f.find("frame 3\n"), std::string::npos);
}

// A program that crashed and also breaks a static rule hears of both, so that its fix does not
// come back rejected (on an H200, a fix of a kernel-signature error kept a computed getattr()).
TEST(Feedback, AFailedCheckBesideAnotherStatusIsNamedToo) {
  json doc = {{"status", "runtime_error"},
              {"error", {{"kind", "runtime_error"}, {"message", "trial 0 failed: TypeError: colsum_v4_k4"}}},
              {"checks", {{{"name", "static.dynamic_code"}, {"verdict", "fail"}, {"message", "line 220: calls getattr()"}},
                          {{"name", "static.torch_delegation"}, {"verdict", "pass"}, {"message", "nothing found"}}}}};
  std::string f = functional_feedback(doc);
  EXPECT_NE(f.find("TypeError: colsum_v4_k4"), std::string::npos) << f;
  EXPECT_NE(f.find("Once it runs, it is also rejected by these checks:\n- check `static.dynamic_code` failed: line 220"),
            std::string::npos) << f;
  EXPECT_EQ(f.find("torch_delegation"), std::string::npos) << f;
  doc["checks"][0]["verdict"] = "pass";
  EXPECT_EQ(functional_feedback(doc).find("also rejected"), std::string::npos);
}

TEST(Feedback, MissingFieldsDoNotThrow) {
  EXPECT_NO_THROW(functional_feedback(json::object()));
  EXPECT_NO_THROW(functional_feedback({{"status", "incorrect"}, {"correctness", json::object()}}));
  EXPECT_EQ(functional_feedback({{"status", "correct"}}), "");
}

// EvalResults come from kforge's trusted side: a field of the wrong type is a bug, named, not guessed at.
TEST(Feedback, AMalformedFieldIsNamed) {
  EXPECT_THROW(
      {
        try {
          functional_feedback({{"status", "incorrect"}, {"correctness", {{"mismatch", 3}}}});
        } catch (const EvalResultError& e) {
          EXPECT_STREQ(e.what(), "EvalResult field `correctness.mismatch` is number, expected an object");
          throw;
        }
      },
      EvalResultError);
}

TEST(Feedback, ACorrectSummaryGivesTheInterleavedEstimateWhenThereIsOne) {
  nlohmann::json doc = {{"status", "correct"}, {"speedup_vs_eager", 1.34},
                        {"speedup", {{"vs_eager", {{"point", 1.67}, {"ci_low", 1.24}, {"ci_high", 1.80}}}}}};
  EXPECT_EQ(one_line_summary(doc), "correct, 1.67x [1.24, 1.80] vs eager");
  doc.erase("speedup");
  EXPECT_EQ(one_line_summary(doc), "correct, 1.34x vs eager");
}

}  // namespace
}  // namespace kforge::agent

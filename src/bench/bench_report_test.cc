// The summary `kforge bench` prints at its end.
#include "bench/bench_report.h"

#include <gtest/gtest.h>

#include "report/metrics.h"

namespace kforge::bench {
namespace {

using json = nlohmann::json;

json doc_of(std::vector<report::ProblemResult> results) {
  json m = report::compute_metrics(results);
  m["wall_seconds"] = 12.25;
  return {{"bench", {{"id", 7}}}, {"metrics", m}};
}

report::ProblemResult correct(double vs_eager, double vs_compile, bool unstable = false) {
  report::ProblemResult r;
  r.correct = true;
  r.speedup_vs_eager = vs_eager;
  r.speedup_vs_compile = vs_compile;
  r.unstable = unstable;
  return r;
}

TEST(TerminalSummary, LeadsWithTheFasterBaselineAndShowsTheSpread) {
  std::string s = terminal_summary(doc_of({correct(2.0, 0.5), correct(1.0, 0.25), report::ProblemResult{}}));
  EXPECT_EQ(s.find("bench 7: 2 of 3 problems correct; wall 12.2 s\n"), 0u) << s;
  auto faster = s.find("vs the faster of eager and torch.compile"), eager = s.find("vs eager");
  ASSERT_NE(faster, std::string::npos) << s;
  EXPECT_LT(faster, eager) << s;
  // Faster baseline: 0.5 and 0.25 (and 1.0 for the failure): geomean 0.5.
  EXPECT_NE(s.find("geomean 0.50x (all problems, failed = 1.0), per problem p25-p75 0.31-0.44x, fast_1 0%"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("warning"), std::string::npos) << s;
}

TEST(TerminalSummary, WarnsAboutUnstableTimings) {
  std::string s = terminal_summary(doc_of({correct(2.0, 2.0, true), correct(1.5, 1.5)}));
  EXPECT_NE(s.find("2 of 2 problems correct, 1 with unstable timings"), std::string::npos) << s;
  EXPECT_NE(s.find("warning: 1 of 2 correct problems have an unstable timing"), std::string::npos) << s;
}

}  // namespace
}  // namespace kforge::bench

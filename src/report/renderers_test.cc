#include <gtest/gtest.h>

#include "report/html_report.h"
#include "report/markdown_report.h"
#include "report/metrics.h"

namespace kforge::report {
namespace {

using json = nlohmann::json;

json sample_doc() {
  json problems = json::array();
  problems.push_back({{"name", "01_relu"}, {"status", "correct"}, {"correct", true}, {"speedup_vs_eager", 2.0},
                      {"speedup_vs_compile", nullptr}, {"candidate_ms", 0.5}, {"eager_ms", 1.0},
                      {"speedup_by_round", {2.0}}, {"message", ""}});
  problems.push_back({{"name", "02_<b>|x"}, {"status", "incorrect"}, {"correct", false},
                      {"message", "output differs </script> here"}, {"speedup_by_round", {nullptr}}});
  std::vector<ProblemResult> results = {problem_result_from_json(problems[0]), problem_result_from_json(problems[1])};
  json metrics = compute_metrics(results);
  metrics["done"] = 2;
  metrics["problems_in_suite"] = 2;
  return {{"kind", "bench"},
          {"bench", {{"id", 4}, {"mode", "candidates"}, {"suite", "examples/problems"}, {"candidates_dir", "/c"},
                     {"target", "cpu"}, {"devices", {"cpu"}}, {"precision", "strict"}, {"status", "finished"},
                     {"wall_seconds", 12.5}}},
          {"metrics", metrics},
          {"problems", problems}};
}

TEST(MarkdownReport, ShowsMetricsPerBaselineAndEveryProblem) {
  std::string md = markdown_report(sample_doc());
  EXPECT_NE(md.find("# kforge bench 4: examples/problems"), std::string::npos);
  EXPECT_NE(md.find("- precision policy: strict"), std::string::npos);
  EXPECT_NE(md.find("Correct: 1 of 2 problems (50%)."), std::string::npos);
  // fast_1 vs eager: one of two problems; torch.compile was not measured.
  EXPECT_NE(md.find("| fast_1 (correct and > 1x faster, share of all problems) | 50% | not measured | 50% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| geomean speedup, all problems (failed = 1.0) | 1.41x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| geomean speedup, correct problems only | 2.00x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 02_<b> x | incorrect |"), std::string::npos) << md;  // a '|' cannot break the table
}

TEST(HtmlReport, IsSelfContainedAndEscapesWhatItEmbeds) {
  std::string html = html_report(sample_doc(), "/* chart library */");
  EXPECT_NE(html.find("<script>/* chart library */</script>"), std::string::npos);
  EXPECT_EQ(html.find("<script src="), std::string::npos);  // nothing loaded from elsewhere
  EXPECT_NE(html.find("<td>02_&lt;b&gt;|x</td>"), std::string::npos);
  // The data block cannot be closed early by a message that contains "</script>".
  EXPECT_NE(html.find(R"(output differs <\/script> here)"), std::string::npos);
  for (const char* id : {"chart-fastp", "chart-speedups", "chart-iterations", "chart-sol"})
    EXPECT_NE(html.find(std::string("<figure id=\"") + id + "\""), std::string::npos) << id;
}

}  // namespace
}  // namespace kforge::report

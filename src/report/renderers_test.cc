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
                      {"timing_spread", {{"candidate", {{"p25_ms", 0.45}, {"p75_ms", 0.6}, {"iqr_rel", 0.3}}},
                                         {"eager", {{"p25_ms", 0.98}, {"p75_ms", 1.02}, {"iqr_rel", 0.04}}}}},
                      {"max_iqr_rel", 0.3}, {"unstable", true},
                      {"speedup_by_round", {2.0}}, {"message", ""},
                      {"library_calls", {"matmul"}}, {"library_share", 0.62}});
  problems.push_back({{"name", "02_<b>|x"}, {"status", "incorrect"}, {"correct", false},
                      {"message", "output differs </script> here"}, {"speedup_by_round", {nullptr}}});
  std::vector<ProblemResult> results = {problem_result_from_json(problems[0]), problem_result_from_json(problems[1])};
  json metrics = compute_metrics(results);
  metrics["done"] = 2;
  metrics["problems_in_suite"] = 2;
  return {{"kind", "bench"},
          {"bench", {{"id", 4}, {"mode", "candidates"}, {"suite", "examples/problems"}, {"candidates_dir", "/c"},
                     {"target", "cpu"}, {"devices", {"cpu"}}, {"precision", "strict"}, {"status", "finished"},
                     {"wall_seconds", 12.5},
                     {"environment", {{"kforge_version", "0.1.0"}, {"torch", {"2.11.0"}}, {"python_version", "3.13.5"},
                                      {"command_line", {"kforge", "bench", "examples/problems"}},
                                      {"host", {{"cpu", "AMD EPYC"}, {"cpus", 2}, {"gpus", json::array()},
                                                {"os", "Linux 6.1"}}}}}}},
          {"metrics", metrics},
          {"problems", problems}};
}

TEST(MarkdownReport, ShowsMetricsPerBaselineAndEveryProblem) {
  std::string md = markdown_report(sample_doc());
  EXPECT_NE(md.find("# kforge bench 4: examples/problems"), std::string::npos);
  EXPECT_NE(md.find("- precision policy: strict"), std::string::npos);
  EXPECT_NE(md.find("Correct: 1 of 2 problems (50%)."), std::string::npos);
  // The faster baseline leads; torch.compile was not measured, so it is eager itself.
  EXPECT_NE(md.find("| metric | vs the faster of eager and torch.compile | vs eager | vs torch.compile |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| fast_1 (correct and > 1x faster, share of all problems) | 50% | 50% | not measured |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| geomean speedup, all problems (failed = 1.0) | 1.41x | 1.41x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| geomean speedup, correct problems only | 2.00x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| spread of the per-problem speedups (correct problems) | p25-p75 2.00-2.00x |"), std::string::npos)
      << md;
  // Neither a '|' nor HTML in a name can break the table or render.
  EXPECT_NE(md.find("| 02_\\<b\\>\\|x | incorrect |"), std::string::npos) << md;
  // Times with their interquartile range, the unstable problem marked, and a warning above the tables.
  EXPECT_NE(md.find("| 01_relu | correct | 2.00x | 2.00x | - | 0.5 (0.45-0.6) | 1 (0.98-1.02) | - | unstable, IQR 30% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**Warning: 1 of 1 correct problems have an unstable timing"), std::string::npos) << md;
  EXPECT_NE(md.find("| matmul (62% of the candidate's time) |"), std::string::npos) << md;
  EXPECT_NE(md.find("- environment: kforge 0.1.0, torch 2.11.0, Python 3.13.5; AMD EPYC (2 CPUs), no NVIDIA GPU; "
                    "Linux 6.1"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- command: `kforge bench examples/problems`"), std::string::npos) << md;
}

TEST(MarkdownReport, NoWarningWhenEveryTimingIsStable) {
  json doc = sample_doc();
  doc["problems"][0]["unstable"] = false;
  doc["metrics"]["unstable"] = 0;
  EXPECT_EQ(markdown_report(doc).find("Warning"), std::string::npos);
}

TEST(HtmlReport, IsSelfContainedAndEscapesWhatItEmbeds) {
  std::string html = html_report(sample_doc(), "/* chart library */");
  EXPECT_NE(html.find("<script>/* chart library */</script>"), std::string::npos);
  EXPECT_EQ(html.find("<script src="), std::string::npos);  // nothing loaded from elsewhere
  EXPECT_NE(html.find("<td>02_&lt;b&gt;|x</td>"), std::string::npos);
  // The data block cannot be closed early by a message that contains "</script>".
  EXPECT_NE(html.find(R"(output differs <\/script> here)"), std::string::npos);
  for (const char* id : {"chart-fastp", "chart-speedups", "chart-sol"})
    EXPECT_NE(html.find(std::string("<figure id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("<p class=\"warning\">Warning: 1 of 1 correct problems have an unstable timing"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"unstable\">unstable, IQR 30%</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>matmul (62% of the candidate&#39;s time)</td>"), std::string::npos) << html;
}

TEST(HtmlReport, ChartsRoundsOnlyForAModelDrivenBench) {
  json doc = sample_doc();
  // --candidates: one file per problem, no rounds to chart.
  EXPECT_EQ(html_report(doc, "").find("id=\"chart-iterations\""), std::string::npos);
  doc["bench"]["mode"] = "llm";
  EXPECT_NE(html_report(doc, "").find("id=\"chart-iterations\""), std::string::npos);
}

}  // namespace
}  // namespace kforge::report

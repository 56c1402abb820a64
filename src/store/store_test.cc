#include "store/store.h"

#include <unistd.h>

#include <sys/wait.h>

#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

namespace kforge {
namespace {

std::filesystem::path temp_db() {
  char t[] = "/tmp/kforge-store-XXXXXX";
  return std::filesystem::path(mkdtemp(t)) / "kforge.db";
}

TEST(Store, RecordsEvaluationsWithTheirCandidateSource) {
  auto path = temp_db();
  std::int64_t id;
  {
    Store store(path);
    nlohmann::json result = {{"candidate_sha256", "abc"}, {"problem", "p.py"}, {"problem_sha256", "def"},
                             {"target", "cpu"}, {"device", "cpu"}, {"status", "correct"}, {"speedup_vs_eager", 2.5},
                             {"speedup_vs_compile", nullptr}};
    id = store.add_evaluation(result, "class ModelNew: pass\n");
    store.add_evaluation(result, "class ModelNew: pass\n");
  }
  Store reopened(path);
  auto e = reopened.evaluation(id);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, "correct");
  EXPECT_EQ(e->result["speedup_vs_eager"], 2.5);
  EXPECT_EQ(reopened.evaluations_of("abc").size(), 2u);
  EXPECT_EQ(reopened.candidate_source("abc"), "class ModelNew: pass\n");
  EXPECT_EQ(reopened.schema_version(), 3);
}

TEST(Store, ManyProcessesMayOpenANewStoreAtOnce) {
  // Parallel `kforge eval`s on a fresh machine all create the same store at once.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto path = temp_db();
    std::vector<pid_t> children;
    for (int i = 0; i < 8; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        int code = 0;
        try {
          Store store(path);
          store.add_evaluation({{"candidate_sha256", "abc"}, {"status", "correct"}}, "x");
        } catch (const std::exception& e) {
          fprintf(stderr, "%s\n", e.what());
          code = 1;
        }
        _exit(code);
      }
      children.push_back(pid);
    }
    int failures = 0;
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ASSERT_EQ(failures, 0) << "attempt " << attempt;
    EXPECT_EQ(Store(path).evaluation(8).has_value(), true);
  }
}

TEST(Store, UnknownIdsAreAbsent) {
  Store store(temp_db());
  EXPECT_FALSE(store.evaluation(42));
  EXPECT_FALSE(store.candidate_source("nope"));
}

TEST(Store, RunStepsAreStoredOnceAndSurviveReopening) {
  auto path = temp_db();
  std::int64_t run;
  {
    Store store(path);
    run = store.create_run("/p/relu.py", "abc", "cpu", "exec:model", {{"samples", 2}});
    store.add_llm_call(run, "r0.s0.a0.gen", {{"messages", nlohmann::json::array()}},
                       {{"text", "first"}, {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}});
    store.add_llm_call(run, "r0.s0.a0.gen", {{"messages", nlohmann::json::array()}}, {{"text", "second"}});
    std::string sha = store.add_run_candidate(run, "r0.s0.a0", "class ModelNew: pass\n");
    nlohmann::json result = {{"candidate_sha256", sha}, {"status", "incorrect"}};
    std::int64_t e1 = store.add_run_evaluation(run, "r0.s0.a0.check", result, "class ModelNew: pass\n");
    EXPECT_EQ(store.add_run_evaluation(run, "r0.s0.a0.check", result, "class ModelNew: pass\n"), e1);
    store.add_decision(run, 0, "r0.s0.a0", "feedback", sha, {{"status", "incorrect"}});
    store.add_decision(run, 0, "r0.s0.a0", "feedback", sha, {{"status", "changed"}});
    store.set_run_status(run, "finished", {{"best", nullptr}});
  }
  Store store(path);
  auto r = store.run(run);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, "finished");
  EXPECT_EQ(r->options["samples"], 2);
  EXPECT_TRUE(r->summary.contains("best"));
  auto call = store.llm_call(run, "r0.s0.a0.gen");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->response["text"], "first");
  EXPECT_EQ(call->input_tokens, 10);
  EXPECT_EQ(store.llm_calls(run).size(), 1u);
  EXPECT_FALSE(store.llm_call(run, "r0.s1.a0.gen"));
  EXPECT_TRUE(store.run_candidate(run, "r0.s0.a0"));
  ASSERT_TRUE(store.run_evaluation(run, "r0.s0.a0.check"));
  EXPECT_EQ(store.run_evaluations(run).size(), 1u);
  auto decisions = store.decisions(run);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].detail["status"], "incorrect");
  store.set_run_status(run, "interrupted");
  EXPECT_TRUE(store.run(run)->summary.contains("best"));  // a status change keeps the summary
}

TEST(Store, BenchProblemsKeepTheirProgressAcrossReopening) {
  auto path = temp_db();
  std::int64_t id;
  {
    Store store(path);
    StoredBenchProblem a, b;
    a.name = "01_relu";
    a.problem = "/p/01_relu.py";
    a.problem_sha256 = "aa";
    b.position = 1;
    b.name = "02_sum";
    b.problem = "/p/02_sum.py";
    b.problem_sha256 = "bb";
    b.candidate = "/c/02_sum.py";
    id = store.create_bench("candidates", "/p", "cpu", {{"jobs", 1}}, {a, b});
    b.status = "done";
    b.outcome = {{"correct", true}};
    store.update_bench_problem(id, b);
    store.set_bench_status(id, "interrupted");
  }
  Store reopened(path);
  auto bench = reopened.bench(id);
  ASSERT_TRUE(bench);
  EXPECT_EQ(bench->status, "interrupted");
  EXPECT_EQ(bench->mode, "candidates");
  EXPECT_EQ(bench->options["jobs"], 1);
  EXPECT_TRUE(bench->summary.is_null());
  auto problems = reopened.bench_problems(id);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].name, "01_relu");
  EXPECT_EQ(problems[0].status, "pending");
  EXPECT_EQ(problems[0].candidate, "");
  EXPECT_EQ(problems[1].status, "done");
  EXPECT_EQ(problems[1].candidate, "/c/02_sum.py");
  EXPECT_EQ(problems[1].outcome["correct"], true);
  EXPECT_FALSE(reopened.bench(id + 1));

  std::int64_t run = reopened.create_bench_run(id, "01_relu", "/p/01_relu.py", "aa", "cpu", "exec:m", {{"rounds", 1}});
  auto row = reopened.bench_problems(id)[0];
  EXPECT_EQ(row.run_id, run);
  EXPECT_EQ(row.status, "running");
  EXPECT_EQ(reopened.run(run)->options["rounds"], 1);
}

}  // namespace
}  // namespace kforge

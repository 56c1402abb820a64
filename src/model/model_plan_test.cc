#include "model/model_plan.h"

#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge::model {
namespace {

using json = nlohmann::json;

json analysis() {
  return json::parse(R"({"regions": [
    {"name": "region-1", "share": 0.5, "problem": "/o/regions/region-1.py"},
    {"name": "region-2", "share": 0.3, "skipped": "a function attribute cannot be written"},
    {"name": "region-3", "share": 0.1, "problem": "/o/regions/region-3.py"},
    {"name": "region-4", "share": 0.05, "problem": "/o/regions/region-4.py"}]})");
}

TEST(ModelPlan, TopRegionsLeaveSkippedOnesOut) {
  auto top = top_regions(analysis(), 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0]["name"], "region-1");
  EXPECT_EQ(top[1]["name"], "region-3");
  EXPECT_EQ(top_regions(analysis(), 10).size(), 3u);
  EXPECT_TRUE(top_regions(json::object(), 3).empty());
}

TEST(ModelPlan, AFreshRunTakesTheRegionAndTheSettingsAResumedOneOnlyItsId) {
  ModelOptions o;
  o.llm = "exec:model.py";
  o.threads = 1;
  o.run_args = {"--rounds", "2"};
  o.db = "/s/kforge.db";
  o.python = "/venv/bin/python";
  json region = analysis()["regions"][0];
  auto fresh = run_argv("kforge", o, region, "/o/runs/region-1", 0);
  const std::vector<std::string> want = {"kforge", "run", "/o/regions/region-1.py", "--target", "cpu", "--llm",
                                         "exec:model.py", "--out", "/o/runs/region-1", "--json",
                                         "/o/runs/region-1/run.json", "--python", "/venv/bin/python", "--threads",
                                         "1", "--rounds", "2", "--db", "/s/kforge.db"};
  EXPECT_EQ(fresh, want);
  auto resumed = run_argv("kforge", o, region, "/o/runs/region-1", 7);
  const std::vector<std::string> want_resumed = {"kforge", "run", "--resume", "7", "--llm", "exec:model.py", "--json",
                                                 "/o/runs/region-1/run.json", "--db", "/s/kforge.db"};
  EXPECT_EQ(resumed, want_resumed);
}

TEST(ModelPlan, KernelEntryFromARunSummary) {
  json s = json::parse(R"({"run_id": 4, "status": "finished", "best_file": "/o/best.py",
                          "best": {"speedup_vs_eager": 1.7}})");
  json k = kernel_entry(s);
  EXPECT_EQ(k["run"], 4);
  EXPECT_EQ(k["file"], "/o/best.py");
  EXPECT_DOUBLE_EQ(k["speedup"].get<double>(), 1.7);
  EXPECT_TRUE(run_done(k));
  json failed = kernel_entry(json::parse(R"({"run_id": 5, "status": "interrupted", "best": null})"));
  EXPECT_FALSE(failed.contains("file"));
  EXPECT_FALSE(run_done(failed));
  EXPECT_TRUE(run_resumable(failed));
  // A model that did not answer (`manual:` waiting for a reply): resumed, not given up.
  json waiting = kernel_entry(json::parse(R"({"run_id": 6, "status": "failed", "stop_reason": "llm_error"})"));
  EXPECT_EQ(waiting["stop_reason"], "llm_error");
  EXPECT_TRUE(run_resumable(waiting));
  EXPECT_FALSE(run_resumable(kernel_entry(json::parse(R"({"run_id": 7, "status": "failed",
                                                          "stop_reason": "evaluation_error"})"))));
}

TEST(ModelPlan, TheInterpreterIsKeptInTheStoredOptions) {
  ModelOptions o;
  o.python = "/venv/bin/python";
  EXPECT_EQ(options_from_json(to_json(o)).python, "/venv/bin/python");
}

TEST(ModelPlan, OptionsRoundTrip) {
  ModelOptions o;
  o.model = "/m.py";
  o.sets = {"n_embd=64"};
  o.top = 2;
  o.e2e_compile = false;
  o.run_args = {"--seed", "1"};
  o.hf_config = "llama";
  ModelOptions back = options_from_json(to_json(o));
  EXPECT_EQ(to_json(back), to_json(o));
  EXPECT_EQ(back.hf_config, "llama");
}

TEST(ModelPlan, NextModelDirIsTheFirstFree) {
  auto base = make_temp_dir("kforge-model-test");
  EXPECT_EQ(next_model_dir(base), base / "model-1");
  std::filesystem::create_directories(base / "model-1");
  std::filesystem::create_directories(base / "model-3");
  EXPECT_EQ(next_model_dir(base), base / "model-2");
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace kforge::model

#include "model/model_plan.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge::model {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json analysis() {
  return json::parse(R"({"regions": [
    {"name": "region-1", "kind": "gemm", "share": 0.5, "problem": "/o/regions/region-1.py"},
    {"name": "region-2", "kind": "norm", "share": 0.3, "skipped": "a function attribute cannot be written"},
    {"name": "region-3", "kind": "norm", "share": 0.1, "problem": "/o/regions/region-3.py"},
    {"name": "region-4", "kind": "attention", "share": 0.05, "problem": "/o/regions/region-4.py"}]})");
}

TEST(ModelPlan, TopRegionsLeaveSkippedOnesOut) {
  auto top = top_regions(analysis(), 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0]["name"], "region-1");
  EXPECT_EQ(top[1]["name"], "region-3");
  EXPECT_EQ(top_regions(analysis(), 10).size(), 3u);
  EXPECT_TRUE(top_regions(json::object(), 3).empty());
}

TEST(ModelPlan, SelectorsNameRegionsByNameOrKindAndTopCountsOnlyThose) {
  auto norms = top_regions(analysis(), 3, {"norm"});
  ASSERT_EQ(norms.size(), 1u);  // region-2 is a norm too, but it was not written as a problem
  EXPECT_EQ(norms[0]["name"], "region-3");
  auto two = top_regions(analysis(), 1, {"region-4", "gemm"});
  ASSERT_EQ(two.size(), 1u);  // the first by share among those named
  EXPECT_EQ(two[0]["name"], "region-1");
  EXPECT_EQ(top_regions(analysis(), 3, {"region-4", "gemm"}).size(), 2u);
  EXPECT_EQ(unmatched_selectors(analysis(), {"norm", "regoin-3", "conv"}), (std::vector<std::string>{"regoin-3", "conv"}));
  EXPECT_TRUE(unmatched_selectors(analysis(), {}).empty());
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

TEST(ModelPlan, EachRegionRunRecordsAndReplaysItsOwnTranscript) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("kforge-model-plan-{}", ::getpid());
  fs::create_directories(dir);
  ModelOptions o;
  o.llm = "replay:" + dir.string();
  o.record_dir = "/rec";
  o.replay_by_position = true;
  // Named by the region's modules, not its number (another machine's profile may order them otherwise).
  json region = analysis()["regions"][0];
  region["instances"] = json::parse(R"([["mlp.c_fc", "mlp.act"], ["other.c_fc", "other.act"]])");
  auto argv = run_argv("kforge", o, region, "/o/runs/region-1", 0);
  auto at = [&](const std::string& flag) { return *(std::find(argv.begin(), argv.end(), flag) + 1); };
  EXPECT_EQ(at("--llm"), "replay:" + (dir / "mlp.c_fc+mlp.act.jsonl").string());
  EXPECT_EQ(at("--record"), "/rec/mlp.c_fc+mlp.act.jsonl");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--replay-by-position"), argv.end());
  // A resumed run records again, and keeps its own replay settings (`kforge run --resume` takes no others).
  auto resumed = run_argv("kforge", o, region, "/o/runs/region-1", 7);
  EXPECT_EQ(*(std::find(resumed.begin(), resumed.end(), "--record") + 1), "/rec/mlp.c_fc+mlp.act.jsonl");
  EXPECT_EQ(std::find(resumed.begin(), resumed.end(), "--replay-by-position"), resumed.end());
  // A transcript file (not a folder) is every region's, as given; other kinds are untouched.
  EXPECT_EQ(region_llm("replay:" + (dir / "all.jsonl").string(), region), "replay:" + (dir / "all.jsonl").string());
  EXPECT_EQ(region_llm("exec:model.py", region), "exec:model.py");
  // manual: one folder per region, so that runs in progress at once do not number their requests alike.
  EXPECT_EQ(region_llm("manual:" + dir.string(), region), "manual:" + (dir / "mlp.c_fc+mlp.act").string());
  EXPECT_EQ(*(std::find(resumed.begin(), resumed.end(), "--llm") + 1), "replay:" + (dir / "mlp.c_fc+mlp.act.jsonl").string());
  EXPECT_EQ(transcript_name(analysis()["regions"][1]), "region-2.jsonl");  // no instances: its name
  json whole = analysis()["regions"][0];
  whole["instances"] = json::parse(R"([[""]])");  // the region is the model itself
  EXPECT_EQ(region_stem(whole), "model");
  // Kept for a resume.
  ModelOptions back = options_from_json(to_json(o));
  EXPECT_EQ(back.record_dir, "/rec");
  EXPECT_TRUE(back.replay_by_position);
  fs::remove_all(dir);
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
  o.executor = "ray";
  o.ray_address = "head:6379";
  o.jobs = 2;
  o.budget_minutes = 12.5;
  ModelOptions back = options_from_json(to_json(o));
  EXPECT_EQ(to_json(back), to_json(o));
  EXPECT_EQ(back.hf_config, "llama");
  EXPECT_EQ(back.budget_minutes, 12.5);
  // A model.json from before the executor settings: local, as `kforge bench` chooses, no budget.
  ModelOptions old = options_from_json(json::parse(R"({"model": "/m.py"})"));
  EXPECT_EQ(old.executor, "local");
  EXPECT_EQ(old.jobs, 0);
  EXPECT_EQ(old.budget_minutes, 0);
}

TEST(ModelPlan, TimeLimitIsTheSmallerOfTheBudgetsAndTheGivenOne) {
  using V = std::vector<std::string>;
  EXPECT_EQ(with_time_limit({"kforge", "run", "p.py"}, 90.2), (V{"kforge", "run", "p.py", "--time-limit", "91"}));
  EXPECT_EQ(with_time_limit({"kforge", "run", "--time-limit", "30", "p.py"}, 90), (V{"kforge", "run", "p.py", "--time-limit", "30"}));
  EXPECT_EQ(with_time_limit({"kforge", "run", "--time-limit=600", "p.py"}, 90), (V{"kforge", "run", "p.py", "--time-limit", "90"}));
  // 0 is no limit: the budget's stands; and never below a second.
  EXPECT_EQ(with_time_limit({"run", "--time-limit", "0"}, 0.01), (V{"run", "--time-limit", "1"}));
}

TEST(ModelPlan, ACrashedRunsIdAndErrorFromItsLog) {
  const std::string log =
      "06:46:54 info run 8: region-1.py on cpu with exec:x (resume with `kforge run --resume 8`)\n"
      "06:46:55 info round 1\n";
  EXPECT_EQ(run_id_in_log(log), 8);
  EXPECT_EQ(error_line_in_log(log), "");
  EXPECT_EQ(run_id_in_log("nothing started\n"), 0);
  const std::string failed = log + "kforge: internal error: the store is locked\n06:47:00 info bye\n\n";
  EXPECT_EQ(error_line_in_log(failed), "kforge: internal error: the store is locked");
  EXPECT_EQ(error_line_in_log(""), "");
  EXPECT_EQ(error_line_in_log("RuntimeError: boom"), "RuntimeError: boom");
}

TEST(ModelPlan, SkippedForBudgetSaysWhy) {
  json k = skipped_for_budget(0.5);
  EXPECT_EQ(k["status"], "skipped");
  EXPECT_NE(k["reason"].get<std::string>().find("budget"), std::string::npos);
  EXPECT_NE(k["reason"].get<std::string>().find("0.5 minute"), std::string::npos);
  EXPECT_FALSE(run_done(k));
  EXPECT_TRUE(has_flag({"a", "--no-profile"}, "--no-profile"));
  EXPECT_FALSE(has_flag({"a", "--no-profile=1"}, "--no-profile"));
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

#include "eval/correctness.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/shell_worker_testing.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A worker that logs each command with its trial to `log` and answers every one as a passing trial.
std::unique_ptr<WorkerClient> logging_worker(const std::string& role, const fs::path& log) {
  return shell_worker(role, R"sh(
  trial=$(echo "$line" | sed -n 's/.*"trial":\([0-9]*\).*/\1/p')
  echo "$cmd $trial" >> )sh" + log.string() + R"sh(
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"inputs\":\"inputs_$trial\",\"input_bytes\":4,\"match\":true,\"seconds\":0.001}" >&3
)sh");
}

// The reference's commands in the order it received them, with the candidate's run requests as
// the candidate saw them.
std::vector<std::string> reference_order(int pipelined_from, int trials) {
  const fs::path dir = fs::temp_directory_path() / ("kforge-trials-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(pipelined_from));
  fs::create_directories(dir);
  auto ref = logging_worker("reference", dir / "reference.log");
  auto cand = logging_worker("candidate", dir / "candidate.log");
  EvalOptions options;
  options.timeout_s = options.reference_timeout_s = 20;
  EvalRun run{options, nullptr, nullptr};
  run.ref = ref.get();
  run.cand = cand.get();
  run.pipelined_from = pipelined_from;
  EXPECT_TRUE(run_trials(run, "main", trials, false));
  EXPECT_EQ(run.correctness.trials_passed, trials);
  run.ref = run.cand = nullptr;
  std::ifstream in(dir / "reference.log");
  std::vector<std::string> order;
  for (std::string line; std::getline(in, line);) order.push_back(line);
  fs::remove_all(dir);
  return order;
}

TEST(Trials, TrialsBeforeThePipelinedOneRunAloneAndLaterOnesOverlap) {
  // Trials 0-2 alone (the precision audit's, on a device the reference shares with nothing), then
  // the reference draws trial t+1 before it checks trial t.
  EXPECT_EQ(reference_order(3, 6),
            (std::vector<std::string>{"make_trial 0", "check 0", "make_trial 1", "check 1", "make_trial 2",
                                      "check 2", "make_trial 3", "make_trial 4", "check 3", "make_trial 5",
                                      "check 4", "check 5"}));
}

TEST(Trials, SmallTrialsOverlapFromTheFirstAndNoneWhenTheReferenceSaysSo) {
  EXPECT_EQ(reference_order(0, 3), (std::vector<std::string>{"make_trial 0", "make_trial 1", "check 0",
                                                             "make_trial 2", "check 1", "check 2"}));
  EXPECT_EQ(reference_order(-1, 3), (std::vector<std::string>{"make_trial 0", "check 0", "make_trial 1",
                                                              "check 1", "make_trial 2", "check 2"}));
}

TEST(Trials, TheCandidateGetsTheDigestsOfTheSetTheReferencePublished) {
  const fs::path dir = fs::temp_directory_path() / ("kforge-digests-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The reference answers make_trial with one digest per input (the device path); the candidate logs
  // each run request as it got it.
  auto ref = shell_worker("reference", R"sh(
  trial=$(echo "$line" | sed -n 's/.*"trial":\([0-9]*\).*/\1/p')
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"inputs\":\"inputs_$trial\",\"input_bytes\":4,\"match\":true,\"input_digests\":[[[\"float32\",[4],$trial]],null]}" >&3
)sh");
  auto cand = shell_worker("candidate", R"sh(
  [ "$cmd" = run ] && echo "$line" >> )sh" + (dir / "runs.log").string() + R"sh(
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"seconds\":0.001}" >&3
)sh");
  EvalOptions options;
  options.timeout_s = options.reference_timeout_s = 20;
  EvalRun run{options, nullptr, nullptr};
  run.ref = ref.get();
  run.cand = cand.get();
  run.pipelined_from = 0;
  EXPECT_TRUE(run_trials(run, "main", 2, false));
  run.ref = run.cand = nullptr;
  std::ifstream in(dir / "runs.log");
  std::vector<nlohmann::json> runs;
  for (std::string line; std::getline(in, line);) runs.push_back(nlohmann::json::parse(line));
  fs::remove_all(dir);
  ASSERT_EQ(runs.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(runs[t]["inputs"], "inputs_" + std::to_string(t));
    EXPECT_EQ(runs[t]["input_digests"], nlohmann::json::parse("[[[\"float32\",[4]," + std::to_string(t) + "]],null]"));
  }
}

}  // namespace
}  // namespace kforge

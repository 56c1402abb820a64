#include "eval/timing_phase.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "eval/eval_result.h"
#include "eval/shell_worker_testing.h"
#include "eval/timing_stats.h"

namespace kforge {
namespace {

TEST(Crosscheck, HonestBlocksPass) {
  EXPECT_FALSE(crosscheck_block(50.0, 53.0, 5));   // a little overhead around the timed calls
  EXPECT_FALSE(crosscheck_block(0.2, 2.0, 5));     // tiny kernels: fixed overhead dominates
}

TEST(Crosscheck, ReportingMoreThanElapsedFails) {
  auto why = crosscheck_block(100.0, 50.0, 5);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("only 50.000 ms passed"), std::string::npos);
}

TEST(Crosscheck, ReportingFarLessThanElapsedFails) {
  // A patched clock that claims 1 ms per call while each call took 20 ms.
  EXPECT_TRUE(crosscheck_block(5.0, 100.0, 5));
  // Time the worker spent between repetitions (input swaps, kept outputs) is not the timer's fault...
  EXPECT_FALSE(crosscheck_block(5.0, 100.0, 5, 60.0));
  // ...but it never excuses reporting more than passed.
  EXPECT_TRUE(crosscheck_block(100.0, 50.0, 5, 60.0));
}

TEST(Crosscheck, TheMachinesRoundTripDelayIsNotTheTimersFault) {
  // A 1-repetition block on a loaded machine: 0.8 ms reported, 24 ms on kforge's clock, and a no-op
  // round trip to the reference takes 22 ms right now.
  EXPECT_TRUE(crosscheck_block(0.8, 24.0, 1));
  EXPECT_FALSE(crosscheck_block(0.8, 24.0, 1, 0, 22.0));
  // Work hidden from the timer still shows: 100 ms passed, 22 of them the machine's.
  EXPECT_TRUE(crosscheck_block(5.0, 100.0, 5, 0, 22.0));
}

TEST(TimingStats, MedianQuartilesAndSpread) {
  TimingStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.reps, 5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_DOUBLE_EQ(s.p25_ms, 2);
  EXPECT_DOUBLE_EQ(s.p75_ms, 4);
  EXPECT_NEAR(s.iqr_rel(), 2.0 / 3.0, 1e-12);
}

TEST(EvalResult, ExitCodesFollowStatus) {
  EvalResult r;
  r.doc["status"] = "correct";
  EXPECT_EQ(r.exit_code(), 0);
  r.doc["status"] = "incorrect";
  EXPECT_EQ(r.exit_code(), 1);
  r.doc["status"] = "timeout";
  EXPECT_EQ(r.exit_code(), 1);
  r.doc["status"] = "problem_error";
  EXPECT_EQ(r.exit_code(), 2);
  r.doc["status"] = "environment_error";
  EXPECT_EQ(r.exit_code(), 4);
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// A function whose blocks take a fixed time, recording the order it was called in.
class Recorded : public TimedFunction {
 public:
  Recorded(std::string name, double ms, std::vector<std::string>* log, int fail_at = -1)
      : TimedFunction(std::move(name)), ms_(ms), log_(log), fail_at_(fail_at) {}

 protected:
  std::optional<std::vector<double>> measure(int reps, bool keep) override {
    log_->push_back(name() + (keep ? "" : "*") + ":" + std::to_string(reps));
    if (static_cast<int>(log_->size()) == fail_at_) return std::nullopt;
    return std::vector<double>(static_cast<std::size_t>(reps), ms_);
  }

 private:
  double ms_;
  std::vector<std::string>* log_;
  int fail_at_;
};

TEST(TimeInterleaved, WarmsUpThenRotatesTheOrderEachRound) {
  std::vector<std::string> log, phases;
  Recorded a("a", 2.0, &log), b("b", 1.0, &log), e("e", 4.0, &log);
  // 12 repetitions in blocks of 5: rounds of 5, 5 and 2.
  ASSERT_TRUE(time_interleaved({&a, &b, &e}, {1, 12, 5}, [&](const std::string& p) { phases.push_back(p); }));
  EXPECT_EQ(log, (std::vector<std::string>{"a*:1", "b*:1", "e*:1", "a:5", "b:5", "e:5", "b:5", "e:5", "a:5",
                                           "e:2", "a:2", "b:2"}));
  EXPECT_EQ(phases, (std::vector<std::string>{"warm-up", "timing round 1/3", "timing round 2/3", "timing round 3/3"}));
  EXPECT_EQ(a.samples_ms.size(), 12u);  // warm-up repetitions are not kept
  EXPECT_EQ(b.block_medians_ms, (std::vector<double>{1.0, 1.0, 1.0}));
}

TEST(TimeInterleaved, StopsAtTheFirstFailedBlock) {
  std::vector<std::string> log;
  Recorded a("a", 2.0, &log), b("b", 1.0, &log, /*fail_at=*/5);
  EXPECT_FALSE(time_interleaved({&a, &b}, {1, 10, 5}, [](const std::string&) {}));
  // Round 2 starts with b, whose block fails: nothing runs after it, and the failed block is not kept.
  EXPECT_EQ(log, (std::vector<std::string>{"a*:1", "b*:1", "a:5", "b:5", "b:5"}));
  EXPECT_EQ(a.block_medians_ms.size(), 1u);
  EXPECT_EQ(b.block_medians_ms.size(), 1u);
}

// A worker answering `time` with one repetition of `reported` ms after `delay` seconds, and `ping`
// after `ping_delay` seconds: the load of a busy machine held the round trip, or work the timer
// did not see.
std::unique_ptr<WorkerClient> fake_worker(const std::string& role, const std::string& delay,
                                          const std::string& reported, const std::string& ping_delay) {
  return shell_worker(role, R"sh(case $cmd in
    time) sleep )sh" + delay + R"sh(; echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"times_ms\":[)sh" + reported + R"sh(],\"untimed_ms\":0}" >&3 ;;
    ping) sleep )sh" + ping_delay + R"sh(; echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true}" >&3 ;;
    *) echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":false,\"error\":{\"kind\":\"runtime_error\",\"message\":\"unknown\"}}" >&3 ;;
  esac)sh");
}

// A worker answering every command with `reply` (the fields after "id"), as a check would.
std::unique_ptr<WorkerClient> answering_worker(const std::string& role, const std::string& reply) {
  return shell_worker(role, R"sh(printf '{"id":%s,"cmd":"%s",%s}\n' "$id" "$cmd" ')sh" + reply + R"sh(' >&3)sh");
}

// The verdict on a timed repetition whose check the reference answered with `check_reply`.
EvalRun checked_timed_rep(const std::string& check_reply) {
  static EvalOptions options;
  EvalRun run{options, nullptr, nullptr};
  auto ref = answering_worker("reference", check_reply);
  auto cand = answering_worker("candidate", R"("ok":true)");
  run.ref = ref.get();
  run.cand = cand.get();
  EXPECT_FALSE(verify_timed_reps(run, {1}, {1000}));
  run.ref = run.cand = nullptr;
  return run;
}

TEST(VerifyTimedReps, AReferenceOutOfDeviceMemoryIsNotTheCandidatesFault) {
  // Seen on an H100 with KernelBench's 36_RMSNorm_: an honest kernel was rejected as "wrong ()".
  EvalRun run = checked_timed_rep(R"("ok":false,"error":{"kind":"device_oom","message":"CUDA out of memory"})");
  EXPECT_EQ(run.status, status::kProblemError);
  EXPECT_EQ(run.doc["error"].value("cause", ""), "device_oom");  // evaluated again alone, then on the host path
  EXPECT_NE(run.doc["error"].value("message", "").find("CUDA out of memory"), std::string::npos);
}

TEST(VerifyTimedReps, OutputsTheReferenceCannotReadAreRejectedWithTheReason) {
  EvalRun run = checked_timed_rep(R"("ok":false,"error":{"kind":"runtime_error","message":"no such buffer"})");
  EXPECT_EQ(run.status, status::kRejected);
  EXPECT_EQ(run.doc["error"].value("kind", ""), "timed_output");
  EXPECT_NE(run.doc["error"].value("message", "").find("no such buffer"), std::string::npos);
}

TEST(VerifyTimedReps, AWrongOutputIsRejected) {
  EvalRun run = checked_timed_rep(R"("ok":true,"match":false,"mismatch":{"message":"12 of 100 elements differ"})");
  EXPECT_EQ(run.status, status::kRejected);
  EXPECT_NE(run.doc["error"].value("message", "").find("12 of 100 elements differ"), std::string::npos);
}

struct FakeTiming {
  FakeTiming(const std::string& block_delay, const std::string& reported, const std::string& ping_delay)
      : ref(fake_worker("reference", "0", "0", ping_delay)), cand(fake_worker("candidate", block_delay, reported, "0")) {
    run.ref = ref.get();
    run.cand = cand.get();
  }
  EvalOptions options;
  EvalRun run{options, nullptr, nullptr};
  std::unique_ptr<WorkerClient> ref, cand;
};

TEST(CandidateTimer, AnHonestBlockOnALoadedMachinePasses) {
  // Every round trip takes 150 ms, the reference's no-op as much as the candidate's block.
  FakeTiming t("0.15", "0.8", "0.15");
  CandidateTimer timer(t.run);
  EXPECT_TRUE(timer.time_block(1, false)) << t.run.doc.dump();
  EXPECT_TRUE(t.run.status.empty());
}

TEST(CandidateTimer, WorkHiddenFromTheTimerIsRejected) {
  // 0.8 ms reported for 300 ms of work, while the reference answers at once.
  FakeTiming t("0.3", "0.8", "0");
  CandidateTimer timer(t.run);
  EXPECT_FALSE(timer.time_block(1, false));
  EXPECT_EQ(t.run.status, status::kRejected);
  EXPECT_EQ(t.run.doc["error"]["kind"], "timing_crosscheck");
}

// A candidate whose first `stalled` time requests take 200 ms for 10 ms of reported repetitions
// (a load from outside, or a forged timer when every request does), the rest 12 ms; a reference
// whose checks of timed outputs match. It claims 1 s of untimed work, which the loose check
// believes and the floor does not (the trusted measure of it is 0 ms per repetition): only the
// floor judges these blocks.
struct StalledTiming {
  explicit StalledTiming(int stalled, const std::string& reference_reply = R"("ok":true,"match":true)") {
    ref = answering_worker("reference", reference_reply);
    cand = shell_worker("candidate", R"sh(case $cmd in
    time) n=$(cat )sh" + counter.string() + R"sh( 2>/dev/null || echo 0); echo $((n + 1)) >)sh" + counter.string() +
                                          R"sh(
      if [ "$n" -lt )sh" + std::to_string(stalled) + R"sh( ]; then sleep 0.2; else sleep 0.012; fi
      echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"times_ms\":[2,2,2,2,2],\"untimed_ms\":1000}" >&3 ;;
    *) echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true}" >&3 ;;
  esac)sh");
    run.ref = ref.get();
    run.cand = cand.get();
    run.timing_trials = {0};
    run.timing_sets = 1;
  }
  ~StalledTiming() { std::filesystem::remove(counter); }
  std::filesystem::path counter = std::filesystem::temp_directory_path() /
                                  ("kforge-stalled-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
  static inline int made = 0;
  EvalOptions options;
  EvalRun run{options, nullptr, nullptr};
  std::unique_ptr<WorkerClient> ref, cand;
};

TEST(CandidateTimer, BlocksStalledByALoadAreTimedAgainAndTheCandidatePasses) {
  // Three stalled requests: two are timed again, the third is kept (1 far-below block of 4).
  StalledTiming t(3);
  CandidateTimer timer(t.run);
  timer.untimed_per_rep_ms = 0;
  for (int block = 0; block < 4; ++block) ASSERT_TRUE(timer.time_block(5, true)) << t.run.doc.dump();
  EXPECT_EQ(timer.floors.size(), 4u);
  EXPECT_FALSE(reject_verdict(timer.floors));
  int remeasured = 0;
  for (const auto& record : timer.crosschecks) remeasured += record.value("remeasured", false) ? 1 : 0;
  EXPECT_EQ(remeasured, kMaxFloorRemeasures);
  EXPECT_EQ(t.run.timed_reps_kept, 20);  // the blocks timed again are not counted
}

TEST(CandidateTimer, UntimedWorkSlowedByALoadIsMeasuredAgainByTheReference) {
  // Every block 200 ms; the reference, asked again, now measures 100 ms of untimed work a repetition.
  StalledTiming t(1000, R"("ok":true,"match":true,"untimed_ms_per_rep":100)");
  CandidateTimer timer(t.run);
  timer.untimed_per_rep_ms = 0;
  for (int block = 0; block < 4; ++block) ASSERT_TRUE(timer.time_block(5, true)) << t.run.doc.dump();
  EXPECT_FALSE(reject_verdict(timer.floors));
  EXPECT_DOUBLE_EQ(timer.untimed_per_rep_ms, 100.0);
  EXPECT_EQ(timer.crosschecks[0].value("untimed_ms_per_rep_now", 0.0), 100.0);
}

TEST(CandidateTimer, ATimerFarBelowKforgesClockInEveryBlockIsStillRejected) {
  StalledTiming t(1000);
  CandidateTimer timer(t.run);
  timer.untimed_per_rep_ms = 0;
  for (int block = 0; block < 4; ++block) ASSERT_TRUE(timer.time_block(5, true)) << t.run.doc.dump();
  auto why = reject_verdict(timer.floors);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("4 of 4 timed blocks"), std::string::npos) << *why;
}

}  // namespace
}  // namespace kforge

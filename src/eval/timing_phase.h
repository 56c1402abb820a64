// Timing: functions measured in interleaved blocks (round i of each sees the same machine
// conditions), each candidate block cross-checked against kforge's clock. Every repetition runs on
// an input set kforge scheduled (written into the buffers outside the timed region), its outputs are
// kept, and after the block kforge picks which repetitions the reference checks (docs/checks.md,
// `timed_output`). The same machinery times one candidate against the
// PyTorch baselines (time_candidate) or two candidates against each other (head_to_head.h).
#pragma once

#include <algorithm>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/clock_floor.h"
#include "eval/device_lock.h"
#include "eval/eval_run.h"
#include "eval/timing_stats.h"
#include "eval/worker_replies.h"

namespace kforge {

// Checks that reported per-repetition times are consistent with kforge's own clock for the
// block: no more than the elapsed wall time, and not far less. Returns an explanation when not.
// `untimed_ms`: what the worker reports spending between repetitions (swapping inputs, keeping
// outputs), which kforge's clock sees and the repetition times rightly leave out.
// `round_trip_ms`: what a no-op request to the trusted reference worker takes right now; on a loaded
// machine every round trip waits for a CPU, and that wait is not the candidate's timer's fault.
std::optional<std::string> crosscheck_block(double reported_sum_ms, double wall_ms, int reps, double untimed_ms = 0,
                                            double round_trip_ms = 0);

// Lean timing (a trial-sized set of 1 GiB or more on the device path, the reference's load_problem
// says so): two input sets, and blocks of two repetitions, both checked, so that a candidate keeps
// two outputs of a block on the device instead of five (worker/kforge_worker/exchange/device_transport.py).
inline constexpr int kLeanTimingSets = 2;
inline constexpr int kLeanBlock = 2;

// The calls of a block on a fresh input set without lean timing: a timing block's calls on seen sets
// (two at least), then the fresh call (docs/checks.md, cached results).
inline int fresh_block_calls(int block) { return std::max(block, 2) + 1; }

struct TimingPlan {
  int warmup = 3;  // untimed repetitions of each function, before the rounds
  int reps = 30;   // timed repetitions of each function
  int block = 5;   // repetitions per block; one block of each function per round
  static TimingPlan from(const EvalOptions& options, bool lean = false) {
    return {options.warmup, options.reps, lean ? std::min(options.block, kLeanBlock) : options.block};
  }
  int rounds() const { return block > 0 ? (reps + block - 1) / block : 0; }
};

// One function timed in interleaved blocks.
class TimedFunction {
 public:
  explicit TimedFunction(std::string name) : name_(std::move(name)) {}
  virtual ~TimedFunction() = default;
  const std::string& name() const { return name_; }

  // One block of `reps` repetitions, kept (`keep`) or warm-up. False ends the timing; the run's
  // status then says why.
  bool time_block(int reps, bool keep);

  std::vector<double> samples_ms;        // every kept repetition
  std::vector<double> block_medians_ms;  // the median of each kept block, in round order

 protected:
  // The block's repetition times, or nullopt when it failed (the status set).
  virtual std::optional<std::vector<double>> measure(int reps, bool keep) = 0;

 private:
  std::string name_;
};

// Kept candidate blocks far below their floor (clock_floor.h) that are timed again, per run: on a
// 2-core machine under a test suite's load, an honest GEMM had 3 of 4 blocks far below once.
inline constexpr int kMaxFloorRemeasures = 2;
// Times per run the reference measures the untimed work again, for a block far below its floor: under
// two busy loops and a test suite, an honest candidate's copies took 8x what the reference measured
// before the load (12 ms a repetition against 1.5 ms), and all its blocks were far below.
inline constexpr int kMaxUntimedRemeasures = 3;

// Repetitions of each kept candidate block whose outputs the reference checks.
inline constexpr int kCheckedRepsPerBlock = 2;

// The candidate of a run (prepared with prepare_candidate_timing).
class CandidateTimer : public TimedFunction {
 public:
  explicit CandidateTimer(EvalRun& run, std::string name = "candidate") : TimedFunction(std::move(name)), run_(run) {}
  nlohmann::json crosschecks = nlohmann::json::array();  // reported vs wall time of each block
  // The trusted measure of one repetition's untimed work (the reference's prepare_timing); negative
  // when unknown. Bounds what the candidate may claim as untimed (clock_floor.h).
  double untimed_per_rep_ms = -1;
  std::vector<ClockFloor> floors;  // each kept block's, against kforge's clock

 protected:
  std::optional<std::vector<double>> measure(int reps, bool keep) override;

 private:
  EvalRun& run_;
  int crosscheck_retries_ = 0;
  int floor_remeasures_ = 0;
  int untimed_remeasures_ = 0;
};

// A baseline in the reference worker: "eager" or "compile" (prepared with prepare_reference_timing).
class BaselineTimer : public TimedFunction {
 public:
  BaselineTimer(EvalRun& run, const std::string& which) : TimedFunction(which), run_(run) {}
  std::vector<nlohmann::json> device_states;  // clocks read after each block

 protected:
  std::optional<std::vector<double>> measure(int reps, bool keep) override;

 private:
  EvalRun& run_;
  RepetitionSampler sampler_;  // the baselines get the same kind of schedule as the candidate
};

// Warm-up, then plan.rounds() rounds of one block per function, the order rotated each round so no
// function always runs right after another. False when a function ended the timing.
bool time_interleaved(const std::vector<TimedFunction*>& functions, const TimingPlan& plan,
                      const std::function<void(const std::string&)>& phase);

// While held, no worker of the pool starts and no other evaluation times on this GPU.
struct DeviceHold {
  WorkerPool::Quiet quiet;
  std::optional<DeviceLock> lock;
};
DeviceHold hold_device_for_timing(EvalRun& run, WorkerPool& pool, nlohmann::json& timing);

// The reference's baselines; `with_compile` says whether torch.compile is among them.
bool prepare_reference_timing(EvalRun& run, nlohmann::json& timing, bool* with_compile);
// The candidate's timing buffers and the input sets its repetitions run on: those of the first three
// passed trials, and one drawn for timing when only one trial ran (so no two consecutive
// repetitions share inputs).
bool prepare_candidate_timing(EvalRun& run, nlohmann::json& timing);

// A guard on every timing block: runtime events and patched objects seen during timed calls, inputs
// the calls changed, output types the correctness runs never returned.
bool judge_timing_reply(EvalRun& run, const TimedBlockReply& reply);
// The kept outputs of repetitions `reps` of the last timed block, each against the reference's
// outputs for the trial whose inputs it ran on (`trials`, one per repetition).
bool verify_timed_reps(EvalRun& run, const std::vector<int>& reps, const std::vector<int>& trials);
// One round of `sets` input sets never seen before, each timed in a block of its own: a timing
// block's calls on sets the candidate has seen, then the fresh set's first call (its output and one
// other checked). Adds the round to run.fresh, which `out` gets a copy of.
bool time_on_fresh_inputs(EvalRun& run, int sets, FreshTiming* out);

struct TimingOutcome {
  TimingStats candidate, eager;
  std::optional<TimingStats> compile;
  std::map<std::string, std::vector<double>> block_medians_ms;  // per function, in round order
  DeviceHold hold;  // kept until the speed verdict's re-measurements are done
};

// The candidate against the eager (and torch.compile) baselines; fills doc["timing"].
std::optional<TimingOutcome> time_candidate(EvalRun& run, WorkerPool& pool);

}  // namespace kforge

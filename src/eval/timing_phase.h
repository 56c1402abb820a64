// Timing: functions measured in interleaved blocks (round i of each sees the same machine
// conditions), each candidate block cross-checked against kforge's clock, run on rotating input sets
// and its last output checked by the reference. The same machinery times one candidate against the
// PyTorch baselines (time_candidate) or two candidates against each other (head_to_head.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/device_lock.h"
#include "eval/eval_run.h"
#include "eval/timing_stats.h"
#include "eval/worker_replies.h"

namespace kforge {

// Checks that reported per-repetition times are consistent with kforge's own clock for the
// block: no more than the elapsed wall time, and not far less. Returns an explanation when not.
std::optional<std::string> crosscheck_block(double reported_sum_ms, double wall_ms, int reps);

struct TimingPlan {
  int warmup = 3;  // untimed repetitions of each function, before the rounds
  int reps = 30;   // timed repetitions of each function
  int block = 5;   // repetitions per block; one block of each function per round
  static TimingPlan from(const EvalOptions& options) { return {options.warmup, options.reps, options.block}; }
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

// The candidate of a run (prepared with prepare_candidate_timing).
class CandidateTimer : public TimedFunction {
 public:
  explicit CandidateTimer(EvalRun& run, std::string name = "candidate") : TimedFunction(std::move(name)), run_(run) {}
  nlohmann::json crosschecks = nlohmann::json::array();  // reported vs wall time of each block

 protected:
  std::optional<std::vector<double>> measure(int reps, bool keep) override;

 private:
  bool rotate_inputs();
  EvalRun& run_;
  int blocks_ = 0, current_set_ = 0, crosscheck_retries_ = 0;
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
// The candidate's timing buffers and the input sets it rotates through (those of passed trials).
bool prepare_candidate_timing(EvalRun& run, nlohmann::json& timing);

// A guard on every timing block: runtime events and patched objects seen during timed calls.
bool judge_timing_reply(EvalRun& run, const TimedBlockReply& reply);
// The last timed call's outputs against the reference's for input set `trial`.
bool verify_timed_outputs(EvalRun& run, int trial);
// Three calls on input sets never seen before, each output checked (at most once per run).
bool time_on_fresh_inputs(EvalRun& run, double* median_ms);

struct TimingOutcome {
  TimingStats candidate, eager;
  std::optional<TimingStats> compile;
  std::map<std::string, std::vector<double>> block_medians_ms;  // per function, in round order
  DeviceHold hold;  // kept until the speed verdict's re-measurements are done
};

// The candidate against the eager (and torch.compile) baselines; fills doc["timing"].
std::optional<TimingOutcome> time_candidate(EvalRun& run, WorkerPool& pool);

}  // namespace kforge

// The state one evaluation accumulates while its phases run (screening, correctness, timing, speed
// verdict), and the ways a phase ends it. Each phase is a set of functions taking an EvalRun; the
// driver (evaluator.cc) calls them in order and stops at the first that decides the status.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "eval/eval_result.h"
#include "eval/repetition_sampler.h"
#include "eval/worker_client.h"
#include "eval/worker_launch.h"
#include "eval/worker_pool.h"
#include "eval/worker_replies.h"
#include "util/oom_kills.h"

namespace kforge {

// Progress callback: a short phrase ("compiling candidate", "trial 3/5", "timing round 2/6").
using ProgressFn = void (*)(const std::string& phase, void* user);

// What the correctness trials found so far.
// Calls on input sets never seen before, measured in rounds of blocks (timing_phase.cc's
// time_on_fresh_inputs; docs/checks.md, cached results). Each block runs the calls of a timing block
// on sets the candidate has seen, then the first call on a fresh set.
struct FreshRound {
  std::vector<std::vector<double>> blocks_ms;  // every call of every block, in order

  std::vector<double> fresh_calls_ms() const;  // the last call of each block
  std::vector<double> seen_calls_ms() const;   // the calls before them
};

struct FreshTiming {
  double fresh_ms = 0;  // median of every round's fresh calls
  double again_ms = 0;  // median of every round's calls on seen sets
  std::vector<FreshRound> rounds;
  double seconds = 0;  // wall time the measurement took (drawing the sets, the calls, their checks)

  std::vector<double> fresh_calls_ms() const;
  std::vector<double> seen_calls_ms() const;
};

struct CorrectnessTally {
  int trials_run = 0;
  int trials_passed = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
  nlohmann::json detail = nlohmann::json::object();  // output, tolerances, mismatch, shapes_checked

  nlohmann::json to_json() const;
};

struct EvalRun {
  EvalRun(const EvalOptions& options, ProgressFn progress, void* user);

  const EvalOptions& opt;
  ProgressFn progress = nullptr;
  void* user = nullptr;

  WorkerClient* ref = nullptr;   // the trusted reference worker
  WorkerClient* cand = nullptr;  // the sandboxed candidate worker
  WorkerDirs dirs;               // dirs.shared: where this candidate reads its inputs
  std::filesystem::path reference_shared;  // where the reference writes them (usually dirs.shared)
  // Prefixes the names the candidate puts its outputs under at the reference (transport.py): another
  // candidate served by the same reference (a head-to-head) cannot guess them.
  const std::string output_token;

  nlohmann::json doc = nlohmann::json::object();  // the EvalResult being written
  std::string status;                             // empty while undecided
  std::uint64_t seed = 0;
  int threads = 1;
  CorrectnessTally correctness;
  int main_trials = 0;                                      // opt.trials, raised by calibration
  nlohmann::json extra_variants = nlohmann::json::array();  // size variants calibration asks for
  nlohmann::json import_facts;                              // what the candidate did while imported
  std::optional<PrecisionAudit> precision_worst;            // the worst precision audit seen
  nlohmann::json static_failure;                            // a static check that failed, if any
  int timing_sets = 0;                                      // input sets the timed calls rotate through
  bool lean_timing = false;  // trials of 1 GiB+ on the device: fewer timing sets and kept outputs (timing_phase.h)
  int pipelined_from = 0;    // the first trial that overlaps its neighbours, -1 for none (correctness.cc)
  // The device memory this evaluation may count on: the whole budget where it runs alone, else its
  // reservation (memory_phase.cc). The reference overlaps lean trials only within it.
  std::optional<std::uint64_t> device_share_bytes;
  std::vector<int> timing_trials;                           // the trial whose inputs each of those sets is
  bool reference_mutates_inputs = false;                    // the reference changes its own inputs
  RepetitionSampler sampler;                                // input schedules and checked repetitions
  int timed_reps_kept = 0, timed_reps_checked = 0;          // kept timed repetitions, and how many were checked
  std::string speed_class;                                  // set by the speed verdict when not "standard"
  std::optional<FreshTiming> fresh;                         // calls on fresh inputs, once measured
  // The kernel's out-of-memory kills (util/oom_kills.h), counted now and when a worker dies.
  std::function<std::optional<std::int64_t>()> count_oom_kills = oom_kill_count;
  std::optional<std::int64_t> oom_kills_at_start = count_oom_kills();

  bool decided() const { return !status.empty(); }
  void phase(const std::string& what) const;
  std::filesystem::path candidate_file() const;  // the candidate's copy in its own directory

  // A file the reference wrote, at a path the candidate can read (linked into its shared directory
  // when the two differ, as for the second candidate of a head-to-head).
  std::string visible_to_candidate(const std::string& reference_path) const;
  // The name the candidate's outputs of one run travel under.
  std::string output_name(const std::string& what) const { return output_token + "-" + what; }

  // Finishing touches: each sets the status and fills `error`.
  void fail(const char* status, const std::string& kind, const std::string& message, const std::string& log = "");
  void fail_from_candidate(const WorkerReply& reply, const std::string& during);
  void fail_from_reference(const WorkerReply& reply, const std::string& during);
  // Whether a check the reference could not answer is its own failure (it died, or the device ran
  // out of memory while it copied the candidate's outputs), not the candidate's.
  bool reference_at_fault(const WorkerReply& checked) const;
  // Whether `worker` died of SIGKILL while the out-of-memory killer's count went up: it was ended for
  // host memory (kforge kills a worker only after a timeout, which is reported as such).
  bool killed_for_memory(WorkerClient& worker) const;
  void add_check(const std::string& name, const std::string& verdict, const std::string& message);

  // Findings the reference derived from one check (runtime facts, precision audit); false once
  // they reject the candidate.
  bool apply_findings(const nlohmann::json& findings, const std::optional<PrecisionAudit>& precision = std::nullopt);
};

// The message of a failed reply: the worker's own for kError, kforge's explanation otherwise.
std::string reply_message(const WorkerReply& reply);

}  // namespace kforge

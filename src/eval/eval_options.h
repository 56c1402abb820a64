// What one evaluation is asked to do.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace kforge {

// Defaults shared by every command that evaluates (eval, run, bench, profile).
inline constexpr int kDefaultTrials = 5;
inline constexpr int kDefaultReps = 30;
inline constexpr int kDefaultWarmup = 3;
inline constexpr double kDefaultTimeoutS = 120;

struct EvalOptions {
  std::filesystem::path problem;
  std::filesystem::path candidate;
  Target target;
  std::string device = "cpu";                        // "cpu", "cuda", "cuda:1"
  std::map<std::string, std::string> overrides;      // --set NAME=VALUE, values as Python literals
  int shapes = 0;                                    // extra size variants to check
  int trials = kDefaultTrials;                       // correctness trials on the main shape
  int variant_trials = 2;                            // trials per size variant
  double timeout_s = kDefaultTimeoutS;               // limit for each run/timing request of the candidate
  double reference_timeout_s = 600;                  // limit for each request to the reference
  bool timing = true;
  bool compile_only = false;                         // the target's [compile_only] mode: build only, or an interpreter on the CPU
  int warmup = kDefaultWarmup;                       // untimed repetitions of each timed function
  int reps = kDefaultReps;                           // timed repetitions of each function
  int block = 5;                                     // repetitions per interleaved block
  bool compile_baseline = true;                      // also time torch.compile of the reference
  int threads = 0;                                   // 0: all CPUs this process may use
  std::optional<std::uint64_t> seed;                 // base seed; random when absent
  std::string python;                                // interpreter whose torch the worker uses
  std::string precision = "strict";                  // strict | relaxed
  double sol_slack = 3.0;                            // faster than SOL by this factor is suspicious
  double speedup_warn_factor = 20.0;                 // speedups beyond this are re-measured and warned about
  bool sandbox = true;                               // use bubblewrap where it works
  double sandbox_tmp_gb = 2.0;                       // [sandbox] tmp_gb: the candidate's private tmpfs, GiB
  double sandbox_memory_gb = 0;                      // [sandbox] memory_gb: its memory cgroup, GiB (0: half the host's)
  std::optional<unsigned> sandbox_uid;               // [sandbox] uid: the candidate's host uid when kforge is root
  std::optional<double> device_memory_gb;            // [memory] device_gb: the most evaluations may hold on a device, GiB
  std::filesystem::path log_dir;                     // full logs of this evaluation
  std::optional<std::filesystem::path> config_path;  // hidden from the candidate
  std::map<std::string, std::string> worker_env;     // extra variables for both workers (set by kforge itself)
  std::vector<std::string> reference_wrapper;        // a tool the reference worker runs under (ncu for `kforge profile`)
  std::vector<std::string> candidate_wrapper;        // the same for the candidate, inside its sandbox
};

}  // namespace kforge

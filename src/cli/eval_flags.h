// The evaluation settings of the commands that evaluate candidates (eval, run, bench, profile),
// defined once: each has one name, default, range and help text wherever it applies. run and bench
// also accept the older spellings --eval-trials, --eval-reps, --eval-warmup and --eval-timeout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "eval/eval_options.h"
#include "loop/run_options.h"

namespace kforge {

enum class EvalCommand { kEval, kRun, kBench, kProfile };

struct EvalFlags {
  std::string target = "cpu";
  std::string device;  // eval, run, profile (bench takes a list of devices of its own)
  std::vector<std::string> sets;
  int shapes = 0;
  int trials = kDefaultTrials;
  int reps = kDefaultReps;
  int warmup = kDefaultWarmup;
  double timeout_s = kDefaultTimeoutS;
  int threads = 0;
  std::optional<std::uint64_t> seed;
  std::string precision = "strict";
  std::string python;
  bool no_compile_baseline = false;
  bool no_timing = false;
  bool compile_only = false;  // eval, run: the target's [compile_only] mode
  bool no_sandbox = false;
  bool kernels_only = false;  // eval, run, bench: the target's allowed_torch_calls are dropped
};

// Adds the flags that apply to `command` to `cmd`.
void add_eval_flags(CLI::App* cmd, EvalFlags& flags, EvalCommand command);

// eval, profile: into the evaluation itself. Leaves target, device and python, which need the
// target registry and the configuration, to the caller.
void apply_eval_flags(const EvalFlags& flags, EvalOptions& options);

// run, bench: into the options stored with the run or bench; a missing seed is drawn here, so
// every evaluation of the run or bench uses the same inputs.
void apply_eval_flags(const EvalFlags& flags, loop::RunOptions& options);

// What kforge.toml decides for an evaluation: the worker's interpreter (`python`, from --python or
// the stored run, wins over worker.python), the file the worker reads again, the candidate
// sandbox's tmpfs and uid, and the device memory cap.
void apply_config(const Config& config, const std::string& python, EvalOptions& options);

// Whether candidates may call no PyTorch library function (the target's allowed_torch_calls are
// dropped): --kernels-only, or [checks] kernels_only in kforge.toml.
bool kernels_only(bool flag, const Config& config);

// The evaluation settings of a stored run or bench (everything but problem, candidate, device,
// python and logs).
void apply_run_options(const loop::RunOptions& run, EvalOptions& options);

}  // namespace kforge

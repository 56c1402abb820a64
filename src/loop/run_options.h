// Everything `kforge run` was asked to do. Stored with the run (as JSON) so that
// `kforge run --resume RUN` continues with exactly the same settings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"

namespace kforge::loop {

struct RunOptions {
  // What to optimise, where, with which model.
  std::string problem;           // absolute path of the reference
  std::string target = "cpu";
  std::string device;            // empty: the target's
  std::string llm;               // provider spec (empty: kforge.toml's)
  std::string llm_base_url;
  bool replay_by_position = false;
  std::string transfer_from;     // absolute path of a working kernel from another platform
  std::string prompts_dir;       // empty: <data dir>/prompts
  std::string out_dir;           // where best.py, summary.json and report.md go

  // Search and budgets.
  int samples = 1;               // independent candidates per round
  int jobs = 0;                  // concurrent correctness evaluations (0: min(samples, CPUs))
  int rounds = 4;                // rounds in all, the first generation round included
  int max_fix = 3;               // functional retries per candidate after its first attempt
  std::int64_t max_tokens = 0;   // LLM tokens for the whole run (0: no limit)
  double max_cost_usd = 0;       // LLM cost for the whole run (0: no limit)
  double time_limit_s = 0;       // wall time (0: no limit)
  int patience = 2;              // optimisation rounds without improvement before stopping
  double sol_stop = 0.9;         // stop once the best reaches this fraction of speed-of-light
  double min_gain = 0.03;        // smallest speedup over the best that counts as faster
  int reply_max_tokens = 0;      // per reply (0: [llm] max_tokens)
  std::optional<double> temperature;

  // Evaluation (the same defaults as `kforge eval`: src/eval/eval_options.h).
  int eval_trials = kDefaultTrials;
  int eval_reps = kDefaultReps;
  int eval_warmup = kDefaultWarmup;
  int shapes = 0;                // size variants checked besides the problem's own sizes
  bool timing = true;            // false: correctness only (`bench --candidates --no-timing`)
  bool compile_only = false;     // --compile-only: the target's interpreter on the CPU, untimed
  bool compile_baseline = true;
  bool profile = true;           // profile the best candidate for each analysis (kforge profile)
  int threads = 0;
  double eval_timeout_s = kDefaultTimeoutS;
  std::uint64_t seed = 0;        // drawn once per run so every evaluation of the run uses the same inputs
  std::string precision = "strict";
  bool kernels_only = false;     // no library calls allowed, whatever the target lists
  bool sandbox = true;
  std::string python;
  std::map<std::string, std::string> overrides;
};

nlohmann::json to_json(const RunOptions& options);
RunOptions options_from_json(const nlohmann::json& json);

}  // namespace kforge::loop

// `kforge profile`: where a candidate and its reference stand against the hardware's limit.
//   pass 1 (plain workers)  : a correctness check, kforge's timer on both, speed of light, and
//                             torch.profiler in each worker (kernels, launches, host operators);
//   pass 2 (GPU, ncu found) : both workers again, each under Nsight Compute inside its usual
//                             isolation, profiling a few calls inside a cudaProfilerStart/Stop range;
//   then                    : the reduction (profile/ncu_report.h), the analysis and the text
//                             (profile/analysis.h) and the roofline chart (profile/roofline_svg.h).
// The untrusted candidate only ever runs in its sandboxed worker; a missing ncu, counters it may not
// read or a profiling timeout become a note, and the rest of the profile stands.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "eval/evaluator.h"

namespace kforge::profile {

struct ProfileOptions {
  EvalOptions eval;          // problem, candidate, target, device, overrides, python, sandbox, threads, seed, log_dir
  int reps = 20;             // kforge-timed calls of each side (after eval.warmup untimed ones)
  int profiler_reps = 10;    // calls under torch.profiler
  std::string ncu;           // path to ncu, "off", or empty to look for it
  int ncu_calls = 1;         // calls profiled by Nsight Compute (every kernel is replayed per section pass)
  double ncu_timeout_s = 300;
  std::filesystem::path chart;  // where the SVG goes (empty: no chart)
};

// The profile document (docs/profiling.md): figures per side, analysis, `summary` text, `chart`.
nlohmann::json run_profile(const ProfileOptions& options, ProgressFn progress = nullptr, void* user = nullptr);

// Analysis, text and chart from a document whose sides and sol are filled: the last step of
// run_profile, separate so it can be applied to recorded figures.
void finish_profile(nlohmann::json& doc, const std::filesystem::path& chart);

}  // namespace kforge::profile

// Where the evaluations of `kforge bench` and of `kforge model`'s region runs go, and how many runs
// are in progress at once (docs/bench.md#executors): the same flags, kforge.toml keys and checks for
// both commands.
//   --executor local|ray   else kforge.toml's [bench] executor, else the stored choice, else local
//   --ray-address ADDR     else [bench] ray_address, else the stored one, else a Ray started here
//   --jobs N               0: 1 on the CPU, 2 per GPU (local); 2 per device unit of the cluster (ray)
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/executor.h"
#include "bench/local_executor.h"
#include "config/config.h"
#include "eval/eval_options.h"

namespace kforge {

struct ExecutorFlags {
  std::string executor, ray_address;  // as given; empty: not given
};

// --executor and --ray-address on `cmd`, and --jobs into `jobs` with `jobs_help`.
void add_executor_flags(CLI::App* cmd, ExecutorFlags& flags, int& jobs, const std::string& jobs_help);

// The executor and Ray address from the flags, else kforge.toml's [bench] keys, else what `executor`
// and `ray_address` hold already (a resumed bench or model's stored choice; "local" by default).
// Ray evaluates only inside the candidate sandbox (`sandbox`: whether the runs use it), and places
// each evaluation itself (`device_given`: the user named this host's devices): both are input errors.
void choose_executor(const ExecutorFlags& flags, const Config& config, bool sandbox, bool device_given,
                     std::string& executor, std::string& ray_address);

// --jobs 0 with the local executor: 1 when the only device is the CPU (its timings are best with
// nothing else running), else one build while another is timed on each device (at most the CPUs).
int default_local_jobs(const std::vector<std::string>& devices, unsigned cpus);

struct StartedExecutor {
  std::unique_ptr<bench::Executor> executor;
  bench::LocalExecutor* local = nullptr;  // the executor, when it is local
  int jobs = 1;                           // --jobs 0 resolved
  std::string where;                      // for the first progress line: "cpu", "Ray cluster ... (2 nodes, ...)"
};

// Starts `executor` ("local" or "ray"; Ray: connects to `ray_address` or starts a Ray instance for
// this process, its bridge log in `log_dir`). `e`: the evaluation settings (interpreter, target).
StartedExecutor start_executor(const std::string& executor, const std::string& ray_address, int jobs,
                               const std::vector<std::string>& devices, const EvalOptions& e,
                               const std::filesystem::path& kforge_exe, const std::filesystem::path& log_dir);

}  // namespace kforge

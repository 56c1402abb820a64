#include "cli/eval_flags.h"

#include <algorithm>
#include <random>

#include "eval/overrides.h"
#include "eval/worker_launch.h"

namespace kforge {

namespace {

// "--trials" on eval; "--trials,--eval-trials" on run and bench, where the longer name came first.
std::string name(const char* flag, EvalCommand command, bool has_alias) {
  std::string n = std::string("--") + flag;
  if (has_alias && (command == EvalCommand::kRun || command == EvalCommand::kBench)) n += std::string(",--eval-") + flag;
  return n;
}

bool one_of(EvalCommand c, std::initializer_list<EvalCommand> commands) {
  return std::find(commands.begin(), commands.end(), c) != commands.end();
}

}  // namespace

void add_eval_flags(CLI::App* cmd, EvalFlags& f, EvalCommand c) {
  using enum EvalCommand;
  const bool stored = one_of(c, {kRun, kBench});  // settings stored with the run or bench
  cmd->add_option("-t,--target", f.target, "Target platform (see `kforge targets`)")->capture_default_str();
  if (c != kBench) cmd->add_option("--device", f.device, "Device to run on (cpu, cuda, cuda:N); default: the target's");
  cmd->add_option("--set", f.sets,
                  std::string("Override a problem global before it is computed: NAME=VALUE (repeatable)") +
                      (c == kBench ? "; applies to every problem" : ""));
  if (c != kProfile) {
    cmd->add_option("--shapes", f.shapes, "Also check K varied sizes derived from the size globals")
        ->check(CLI::Range(0, 4))
        ->capture_default_str();
    cmd->add_option(name("trials", c, true), f.trials, "Correctness trials on fresh random inputs")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
  }
  cmd->add_option(name("reps", c, true), f.reps, "Timed repetitions of each function")
      ->check(CLI::Range(c == kProfile ? 4 : 1, 100000))
      ->capture_default_str();
  cmd->add_option(name("warmup", c, true), f.warmup, "Untimed warm-up repetitions of each function")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  cmd->add_option(name("timeout", c, true), f.timeout_s, "Seconds the candidate may take per run or timing block")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--threads", f.threads, "CPU threads for reference and candidate (0: all available)")
      ->capture_default_str();
  cmd->add_option("--seed", f.seed,
                  stored ? "Seed for weights and inputs (default: random, stored)"
                         : "Base seed for weights and inputs (default: random, recorded)");
  cmd->add_option("--precision", f.precision, "strict (fp32 means fp32) or relaxed (TF32 allowed)")
      ->check(CLI::IsMember({"strict", "relaxed"}))
      ->capture_default_str();
  if (c != kProfile) {
    cmd->add_flag("--no-compile-baseline", f.no_compile_baseline, "Do not time torch.compile of the reference");
  }
  if (one_of(c, {kEval, kBench}))
    cmd->add_flag("--no-timing", f.no_timing,
                  c == kBench ? "Check correctness only (with --candidates)" : "Check correctness only");
  if (one_of(c, {kEval, kRun}))
    cmd->add_flag("--compile-only", f.compile_only,
                  c == kRun ? "No GPU needed, for targets whose compile-only mode is an interpreter: check candidates "
                              "in it on the CPU, untimed (`kforge targets` shows which)"
                            : "No GPU needed: build the candidate's kernels only (status compiled/compile_error), or, "
                              "for targets whose compile-only mode is an interpreter, check correctness in it on the "
                              "CPU (`kforge targets` shows which)");
  if (c != kProfile)
    cmd->add_flag("--kernels-only", f.kernels_only,
                  "Allow no PyTorch library calls (the target's allowed_torch_calls) in the candidate's forward");
  cmd->add_flag("--no-sandbox", f.no_sandbox, "Do not use bubblewrap (process-group isolation only)");
  cmd->add_option("--python", f.python, "Python interpreter whose torch the worker uses");
}

void apply_eval_flags(const EvalFlags& f, EvalOptions& o) {
  o.overrides = parse_overrides(f.sets);
  o.shapes = f.shapes;
  o.trials = f.trials;
  o.reps = f.reps;
  o.warmup = f.warmup;
  o.timeout_s = f.timeout_s;
  o.threads = f.threads;
  o.seed = f.seed;
  o.precision = f.precision;
  o.compile_baseline = !f.no_compile_baseline;
  o.timing = !f.no_timing;
  o.compile_only = f.compile_only;
  o.sandbox = !f.no_sandbox;
}

void apply_eval_flags(const EvalFlags& f, loop::RunOptions& o) {
  o.target = f.target;
  o.device = f.device;
  o.overrides = parse_overrides(f.sets);
  o.shapes = f.shapes;
  o.eval_trials = f.trials;
  o.eval_reps = f.reps;
  o.eval_warmup = f.warmup;
  o.eval_timeout_s = f.timeout_s;
  o.threads = f.threads;
  o.precision = f.precision;
  o.python = f.python;
  o.compile_baseline = !f.no_compile_baseline;
  o.timing = !f.no_timing;
  o.compile_only = f.compile_only;
  o.sandbox = !f.no_sandbox;
  o.kernels_only = f.kernels_only;
  std::random_device rd;
  o.seed = f.seed ? *f.seed : (static_cast<std::uint64_t>(rd()) << 16 ^ rd()) % 2147483647u;
}

void apply_config(const Config& config, const std::string& python, EvalOptions& o) {
  o.python = resolve_python(python, config.get_string("worker.python").value_or(""));
  if (!config.path.empty()) o.config_path = config.path;
  o.sandbox_tmp_gb = sandbox_config(config).tmp_gb;
  o.sandbox_memory_gb = sandbox_config(config).memory_gb;
  o.sandbox_uid = sandbox_config(config).uid;
  o.device_memory_gb = device_memory_gb(config);
}

bool kernels_only(bool flag, const Config& config) {
  return flag || config.table.at_path("checks.kernels_only").value_or(false);
}

void apply_run_options(const loop::RunOptions& r, EvalOptions& o) {
  o.overrides = r.overrides;
  o.shapes = r.shapes;
  o.trials = r.eval_trials;
  o.reps = r.eval_reps;
  o.warmup = r.eval_warmup;
  o.timeout_s = r.eval_timeout_s;
  o.threads = r.threads;
  o.seed = r.seed;
  o.precision = r.precision;
  o.compile_baseline = r.compile_baseline;
  o.timing = r.timing;
  o.compile_only = r.compile_only;
  o.sandbox = r.sandbox;
}

}  // namespace kforge

// `kforge profile PROBLEM CANDIDATE --target T`: where the candidate and its reference stand against
// the hardware's limit; prints the summary, writes the roofline chart (docs/profiling.md).
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "config/config.h"
#include "eval/eval_provenance.h"
#include "eval/eval_result.h"
#include "profile/profiler.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

struct ProfileArgs {
  std::string problem, candidate, chart, ncu;
  EvalFlags flags;
  int profiler_reps = 10, ncu_calls = 1;
  double ncu_timeout_s = 300;
  ResultOutput out;
};

void print_progress(const std::string& phase, void* user) {
  if (*static_cast<bool*>(user)) fmt::print(stderr, "\r\033[K[profile] {}", phase);
  else fmt::print(stderr, "[profile] {}\n", phase);
}

int run_profile_command(const ProfileArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  auto registry = TargetRegistry::load(data_dir() / "targets");
  profile::ProfileOptions opt;
  EvalOptions& e = opt.eval;
  if (!fs::is_regular_file(a.problem)) throw InputError(fmt::format("problem file not found: {}", a.problem));
  if (!fs::is_regular_file(a.candidate)) throw InputError(fmt::format("candidate file not found: {}", a.candidate));
  e.problem = a.problem;
  e.candidate = a.candidate;
  e.target = registry.get(a.flags.target);
  e.device = a.flags.device.empty() ? e.target.device : a.flags.device;
  apply_eval_flags(a.flags, e);
  apply_config(config, a.flags.python, e);
  const std::string stamp = fmt::format("{:%Y%m%d-%H%M%S}-{}", fmt::localtime(std::time(nullptr)), getpid());
  e.log_dir = state_dir() / "logs" / ("profile-" + stamp);
  opt.reps = a.flags.reps;
  opt.profiler_reps = a.profiler_reps;
  opt.ncu = a.ncu;
  opt.ncu_calls = a.ncu_calls;
  opt.ncu_timeout_s = a.ncu_timeout_s;
  opt.chart = !a.chart.empty() ? fs::path(a.chart)
                               : state_dir() / "profiles" /
                                     fmt::format("{}-{}-{}.svg", e.problem.stem().string(), e.candidate.stem().string(), stamp);

  bool tty = isatty(STDERR_FILENO) && !global.quiet;
  nlohmann::json doc = profile::run_profile(opt, global.quiet ? nullptr : print_progress, &tty);
  if (tty) fmt::print(stderr, "\r\033[K");
  doc["env"]["python"] = e.python;
  add_provenance(doc);
  a.out.write_json(doc);
  if (doc.contains("error")) {
    fmt::print(stderr, "kforge: profile failed: {} (logs: {})\n", doc["error"].get<std::string>(), e.log_dir.string());
    if (doc.value("status", "") == status::kEnvironmentError) {
      fmt::print(stderr, "kforge: this machine cannot evaluate; `kforge doctor' says what to fix\n");
      return kExitEnvironment;
    }
    return kExitFailed;
  }
  fmt::print(a.out.text(), "{}", doc.value("summary", ""));
  if (doc.contains("chart")) fmt::print(a.out.text(), "Chart: {}\n", doc["chart"].get<std::string>());
  return kExitOk;
}

}  // namespace

void register_profile_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "Profile a candidate and its reference against the hardware's limit");
  cmd->add_option("problem", args->problem, "Reference problem (.py with Model, get_inputs, get_init_inputs)")->required();
  cmd->add_option("candidate", args->candidate, "Candidate (.py defining ModelNew)")->required();
  add_eval_flags(cmd, args->flags, EvalCommand::kProfile);
  cmd->add_option("--profiler-reps", args->profiler_reps, "Calls of each side under torch.profiler")->check(CLI::Range(1, 10000))->capture_default_str();
  cmd->add_option("--ncu", args->ncu, "Nsight Compute executable, or `off` (default: found on PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)");
  cmd->add_option("--ncu-calls", args->ncu_calls, "Calls of each side profiled by Nsight Compute")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--ncu-timeout", args->ncu_timeout_s, "Seconds Nsight Compute may take per side")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--chart", args->chart,
                  "Write the roofline chart (SVG) here (default: <problem>-<candidate>-<time>.svg in profiles/ of "
                  "kforge's state folder, ~/.local/share/kforge)");
  add_json_option(cmd, args->out, "the profile document");
  cmd->callback([args, &global, exit_code] { *exit_code = run_profile_command(*args, global); });
}

}  // namespace kforge

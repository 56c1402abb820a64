// `kforge eval PROBLEM CANDIDATE... --target T`: evaluate candidates in turn, print a summary of
// each, store them. Several candidates share a worker pool: the reference process is kept, and
// each next candidate's process starts while the one before is checked.
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/clean_text.h"
#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "eval/eval_provenance.h"
#include "eval/evaluator.h"
#include "eval/worker_pool.h"
#include "store/store.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/paths.h"
#include "util/subprocess.h"
#include "util/files.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

struct EvalArgs {
  std::string problem;
  std::vector<std::string> candidates;
  EvalFlags flags;
  double sol_slack = 3.0, speedup_warn = 20.0;
  std::string db;
  ResultOutput out;
};

struct Progress {
  bool tty = false;
  std::string label;  // "eval" or "eval 2/5"
};

void print_progress(const std::string& phase, void* user) {
  const auto& p = *static_cast<Progress*>(user);
  if (p.tty) fmt::print(stderr, "\r\033[K[{}] {}", p.label, phase);
  else spdlog::info("{}: {}", p.label, phase);
}

int run_eval(const EvalArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  auto registry = TargetRegistry::load(data_dir() / "targets");
  EvalOptions opt;
  opt.problem = a.problem;
  if (!fs::is_regular_file(opt.problem)) throw InputError(fmt::format("problem file not found: {}", a.problem));
  // Every name is checked before the first evaluation starts, so a typo costs nothing.
  for (const auto& c : a.candidates)
    if (!fs::is_regular_file(c)) throw InputError(fmt::format("candidate file not found: {}", c));
  opt.target = registry.get(a.flags.target);
  opt.device = a.flags.device.empty() ? opt.target.device : a.flags.device;
  if (kernels_only(a.flags.kernels_only, config)) opt.target.allowed_torch_calls.clear();
  apply_eval_flags(a.flags, opt);
  opt.sol_slack = a.sol_slack;
  opt.speedup_warn_factor = a.speedup_warn;
  apply_config(config, a.flags.python, opt);
  const std::string log_base = fmt::format("eval-{:%Y%m%d-%H%M%S}-{}", fmt::localtime(std::time(nullptr)), getpid());
  fs::path db = store_path(a.db, config);
  Store store(db);

  const std::size_t n = a.candidates.size();
  // Candidates back to back: the next one's process starts while the current one is checked.
  WorkerPool pool(n > 1 ? 1 : 0, StartAhead::kWhenEvaluationBegins);
  Progress progress{isatty(STDERR_FILENO) && !global.quiet, "eval"};
  nlohmann::json docs = nlohmann::json::array();
  int exit_code = 0;
  for (std::size_t i = 0; i < n; ++i) {
    opt.candidate = a.candidates[i];
    opt.log_dir = state_dir() / "logs" / (n > 1 ? fmt::format("{}-{}", log_base, i + 1) : log_base);
    if (n > 1) progress.label = fmt::format("eval {}/{}", i + 1, n);
    EvalResult result = evaluate(opt, print_progress, &progress, &pool);
    add_provenance(result.doc);
    if (progress.tty) fmt::print(stderr, "\r\033[K");
    std::int64_t id = store.add_evaluation(result.doc, read_file(opt.candidate));
    result.doc["store"] = {{"path", db.string()}, {"evaluation_id", id}};
    if (result.status() == status::kProblemError)
      fmt::print(stderr, "kforge: problem error: {}\n", terminal_text(result.error_message()));
    if (result.status() == status::kEnvironmentError)
      fmt::print(stderr, "kforge: environment error: {}\n(`kforge doctor` checks this machine)\n",
                 terminal_text(result.error_message()));
    if (n > 1) fmt::print(a.out.text(), "== {}/{}: {}\n", i + 1, n, opt.candidate.string());
    fmt::print(a.out.text(), "{}\n", summarize(result));
    exit_code = std::max(exit_code, result.exit_code());
    docs.push_back(std::move(result.doc));
    // The reference or the machine is at fault: every other candidate would fail the same way.
    if ((exit_code == kExitUsage || exit_code == kExitEnvironment) && i + 1 < n) {
      fmt::print(stderr, "kforge: {} candidate(s) not evaluated\n", n - i - 1);
      break;
    }
  }
  a.out.write_json(n == 1 ? docs[0] : nlohmann::json{{"evaluations", docs}});
  return exit_code;
}

}  // namespace

void register_eval_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate candidates against a KernelBench-format reference");
  cmd->add_option("problem", args->problem, "Reference problem (.py with Model, get_inputs, get_init_inputs)")->required();
  cmd->add_option("candidates", args->candidates,
                  "Candidates (.py defining ModelNew), evaluated in turn; the exit code is the worst of them")
      ->required();
  add_eval_flags(cmd, args->flags, EvalCommand::kEval);
  cmd->add_option("--sol-slack", args->sol_slack, "A time faster than speed of light by this factor is re-measured and, if it holds, rejected as suspicious")->check(CLI::Range(1.0, 1000.0))->capture_default_str();
  cmd->add_option("--speedup-warn", args->speedup_warn, "Speedups over eager beyond this factor are re-measured on fresh inputs and kept with a warning")->check(CLI::PositiveNumber)->capture_default_str();
  add_json_option(cmd, args->out, "the EvalResult (several candidates: {\"evaluations\": [...]})");
  add_db_option(cmd, args->db);
  cmd->callback([args, &global, exit_code] { *exit_code = run_eval(*args, global); });
}

}  // namespace kforge

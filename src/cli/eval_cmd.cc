// `kforge eval PROBLEM CANDIDATE... --target T`: evaluate candidates in turn, print a summary of
// each, store them. Several candidates share a worker pool: the reference process is kept, and
// each next candidate's process starts while the one before is checked.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "eval/evaluator.h"
#include "eval/worker_launch.h"
#include "eval/worker_pool.h"
#include "store/store.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/paths.h"
#include "util/subprocess.h"
#include "eval/overrides.h"
#include "util/files.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

struct EvalArgs {
  std::string problem, target = "cpu", device;
  std::vector<std::string> candidates;
  std::vector<std::string> sets;
  int shapes = 0, trials = 5, reps = 30, warmup = 3, threads = 0;
  double timeout_s = 120, sol_slack = 3.0, speedup_warn = 20.0;
  bool no_compile_baseline = false, no_timing = false, no_sandbox = false, compile_only = false, kernels_only = false;
  std::string json_path, python, db, precision = "strict";
  std::optional<std::uint64_t> seed;
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
  opt.target = registry.get(a.target);
  // --kernels-only or [checks] kernels_only: no PyTorch call may stand in for the reference's computation.
  if (a.kernels_only || config.table.at_path("checks.kernels_only").value_or(false)) opt.target.allowed_torch_calls.clear();
  opt.device = a.device.empty() ? opt.target.device : a.device;
  opt.overrides = parse_overrides(a.sets);
  opt.shapes = a.shapes;
  opt.trials = a.trials;
  opt.reps = a.reps;
  opt.warmup = a.warmup;
  opt.threads = a.threads;
  opt.timeout_s = a.timeout_s;
  opt.compile_baseline = !a.no_compile_baseline;
  opt.timing = !a.no_timing;
  opt.compile_only = a.compile_only;
  opt.sandbox = !a.no_sandbox;
  opt.seed = a.seed;
  opt.precision = a.precision;
  opt.sol_slack = a.sol_slack;
  opt.speedup_warn_factor = a.speedup_warn;
  opt.python = resolve_python(a.python, config.get_string("worker.python").value_or(""));
  if (!config.path.empty()) opt.config_path = config.path;
  opt.sandbox_tmp_gb = sandbox_config(config).tmp_gb;
  opt.sandbox_uid = sandbox_config(config).uid;
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
      fmt::print(stderr, "kforge: problem error: {}\n", result.doc["error"].value("message", ""));
    if (!global.quiet) {
      if (n > 1) fmt::print("== {}/{}: {}\n", i + 1, n, opt.candidate.string());
      fmt::print("{}\n", summarize(result));
    }
    exit_code = std::max(exit_code, result.exit_code());
    docs.push_back(std::move(result.doc));
    // The reference is at fault: every other candidate would fail the same way.
    if (exit_code == 2 && i + 1 < n) {
      fmt::print(stderr, "kforge: {} candidate(s) not evaluated\n", n - i - 1);
      break;
    }
  }
  if (!a.json_path.empty()) {
    std::ofstream out(a.json_path);
    if (!out) throw InputError(fmt::format("cannot write {}", a.json_path));
    out << (n == 1 ? docs[0] : nlohmann::json{{"evaluations", docs}}).dump(2) << "\n";
  }
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
  cmd->add_option("-t,--target", args->target, "Target platform (see `kforge targets`)")->capture_default_str();
  cmd->add_option("--device", args->device, "Device to run on (cpu, cuda, cuda:N); default: the target's");
  cmd->add_option("--set", args->sets, "Override a problem global before it is computed: NAME=VALUE (repeatable)");
  cmd->add_option("--shapes", args->shapes, "Also check K varied sizes derived from the size globals")->check(CLI::Range(0, 4));
  cmd->add_option("--trials", args->trials, "Correctness trials on fresh random inputs")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--reps", args->reps, "Timed repetitions per function")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed warm-up repetitions per function")->check(CLI::Range(0, 10000))->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU threads for reference and candidate (0: all available)")->capture_default_str();
  cmd->add_option("--timeout", args->timeout_s, "Seconds the candidate may take per run or timing block")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", args->seed, "Base seed for weights and inputs (default: random, recorded)");
  cmd->add_option("--precision", args->precision, "strict (fp32 means fp32) or relaxed (TF32 allowed)")->check(CLI::IsMember({"strict", "relaxed"}))->capture_default_str();
  cmd->add_option("--sol-slack", args->sol_slack, "A time faster than speed of light by this factor is re-measured and, if it holds, rejected as suspicious")->check(CLI::Range(1.0, 1000.0))->capture_default_str();
  cmd->add_option("--speedup-warn", args->speedup_warn, "Speedups over eager beyond this factor are re-measured on fresh inputs and kept with a warning")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--no-compile-baseline", args->no_compile_baseline, "Do not time torch.compile of the reference");
  cmd->add_flag("--no-timing", args->no_timing, "Check correctness only");
  cmd->add_flag("--kernels-only", args->kernels_only,
                "Allow no PyTorch library calls (the target's allowed_torch_calls) in the candidate's forward");
  cmd->add_flag("--compile-only", args->compile_only,
                "No GPU needed: build the candidate's kernels only (status compiled/compile_error); for the "
                "triton target, check correctness with the Triton interpreter on the CPU instead");
  cmd->add_flag("--no-sandbox", args->no_sandbox, "Do not use bubblewrap (process-group isolation only)");
  cmd->add_option("--json", args->json_path,
                  "Write the EvalResult JSON to FILE (several candidates: {\"evaluations\": [...]})");
  cmd->add_option("--python", args->python, "Python interpreter whose torch the worker uses");
  cmd->add_option("--db", args->db, "SQLite store (default ~/.kforge/kforge.db)");
  cmd->callback([args, &global, exit_code] { *exit_code = run_eval(*args, global); });
}

}  // namespace kforge

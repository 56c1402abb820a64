// `kforge bench SUITE --target T --llm KIND:MODEL` (a `kforge run` per problem) or
// `kforge bench SUITE --target T --candidates DIR` (evaluate existing candidate files): runs a
// suite end to end and writes its metrics and reports. `kforge bench --resume BENCH` continues
// one that was interrupted or killed. The work is in src/bench/ and src/report/ (docs/bench.md).
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/bench_runner.h"
#include "bench/local_executor.h"
#include "bench/suite.h"
#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/executor_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "cli/resume.h"
#include "cli/report_files.h"
#include "cli/store_ids.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "llm/cancel.h"
#include "store/store.h"
#include "target/target.h"
#include "util/environment.h"
#include "util/errors.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/paths.h"
#include "util/provenance.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct BenchArgs {
  bench::BenchOptions options;
  EvalFlags flags;
  std::string device_list, db;
  ExecutorFlags executor;  // --executor, --ray-address (cli/executor_flags.h)
  std::optional<double> temperature;
  std::string resume;  // N or bench-N
  ResultOutput out;
};

// A new bench: the suite, its candidates and the settings, all stored before anything runs.
std::int64_t create_bench(BenchArgs& a, const TargetRegistry& registry, const Config& config, Store& store) {
  bench::BenchOptions& o = a.options;
  const bool llm_mode = !o.run.llm.empty();
  if (llm_mode == !o.candidates_dir.empty())
    throw InputError("give either --llm KIND:MODEL (generate with a model) or --candidates DIR (evaluate files)");
  o.mode = llm_mode ? "llm" : "candidates";
  if (llm_mode && a.flags.no_timing)
    throw InputError("--no-timing applies to --candidates; a run with a model needs timings to optimise");
  apply_eval_flags(a.flags, o.run);
  Target target = registry.get(o.run.target);  // an unknown target fails before a bench is created
  auto problems = bench::discover_suite(o.suite);
  if (!llm_mode) {
    if (!fs::is_directory(o.candidates_dir))
      throw InputError(fmt::format("--candidates: not a directory: {}", o.candidates_dir));
    o.candidates_dir = fs::absolute(o.candidates_dir).lexically_normal().string();
  }
  choose_executor(a.executor, config, o.run.sandbox, !a.device_list.empty(), o.executor, o.ray_address);
  o.devices = a.device_list.empty() ? std::vector<std::string>{target.device} : bench::parse_device_list(a.device_list);
  // ray: from the cluster's devices, each session
  if (o.jobs <= 0 && o.executor == "local") o.jobs = default_local_jobs(o.devices, std::thread::hardware_concurrency());
  o.run.temperature = a.temperature;
  if (!o.run.prompts_dir.empty()) o.run.prompts_dir = fs::absolute(o.run.prompts_dir).string();

  std::vector<StoredBenchProblem> rows;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    StoredBenchProblem r;
    r.position = static_cast<int>(i);
    r.name = problems[i].name;
    r.problem = problems[i].path.string();
    r.problem_sha256 = sha256_hex(read_file(problems[i].path));
    if (!llm_mode) r.candidate = bench::match_candidate(o.candidates_dir, problems[i]).string();
    rows.push_back(std::move(r));
  }
  std::int64_t id = store.create_bench(o.mode, o.suite, o.run.target, bench::to_json(o), rows);
  o.out_dir = o.out_dir.empty() ? (fs::current_path() / "kforge-out" / fmt::format("bench-{}", id)).string()
                                : fs::absolute(o.out_dir).string();
  // Stored again with the output directory (the bench id is only known now).
  store.set_bench_options(id, bench::to_json(o));
  // The command line it was started with, which a resumed bench's report keeps.
  store.set_bench_status(id, "running", {{"environment", {{"command_line", provenance()["command_line"]}}}});
  return id;
}

int run_bench_command(BenchArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  llm::install_sigint_handler();
  Config config = load_config(global.config_path);
  auto registry = TargetRegistry::load(data_dir() / "targets");
  fs::path db = fs::absolute(store_path(a.db, config));
  Store store(db);

  const std::int64_t resume = a.resume.empty() ? 0 : parse_id_of_kind(a.resume, IdKind::kBench);
  std::int64_t id = resume;
  double prior_wall = 0;
  json started_with, resumed_with = json::array();  // command lines: the first, and each --resume
  if (id > 0) {
    auto b = store.bench(id);
    if (!b) throw InputError(fmt::format("no bench {} in {}", id, db.string()));
    if (b->summary.is_object()) prior_wall = b->summary.value("wall_seconds", 0.0);
    if (b->summary.is_object() && b->summary.contains("environment") && b->summary["environment"].is_object()) {
      started_with = b->summary["environment"].value("command_line", json());
      resumed_with = b->summary["environment"].value("resumed_with", json::array());
    }
    for (const auto& p : store.bench_problems(id))
      if (p.status != "done" && (!fs::is_regular_file(p.problem) || sha256_hex(read_file(p.problem)) != p.problem_sha256))
        throw InputError(fmt::format("{} changed or vanished since bench {} started; start a new bench", p.problem, id));
    store.set_bench_status(id, "running");
  } else {
    if (a.options.suite.empty()) throw InputError("give a SUITE (directory, list file or glob), or --resume BENCH");
    id = create_bench(a, registry, config, store);
  }
  bench::BenchOptions opt = bench::options_from_json(store.bench(id)->options);
  if (resume > 0 && !a.options.run.llm.empty()) opt.run.llm = a.options.run.llm;  // e.g. a moved transcript
  if (resume > 0 && (!a.executor.executor.empty() || !a.executor.ray_address.empty())) {  // e.g. resumed on a cluster
    choose_executor(a.executor, config, opt.run.sandbox, false, opt.executor, opt.ray_address);
    store.set_bench_options(id, bench::to_json(opt));
  }

  bench::BenchContext ctx;
  ctx.bench_id = id;
  ctx.options = opt;
  ctx.store = &store;
  ctx.db_path = db;
  ctx.config_path = global.config_path;
  ctx.kforge_exe = fs::read_symlink("/proc/self/exe");
  ctx.log_dir = state_dir() / "logs" / fmt::format("bench-{}", id);
  ctx.cancel = &llm::global_cancel_flag();
  ctx.prior_wall_seconds = prior_wall;
  EvalOptions& e = ctx.eval_base;
  e.target = registry.get(opt.run.target);
  if (kernels_only(opt.run.kernels_only, config)) e.target.allowed_torch_calls.clear();
  apply_run_options(opt.run, e);
  apply_config(config, opt.run.python, e);

  StartedExecutor started = start_executor(opt.executor, opt.ray_address, opt.jobs, opt.devices, e, ctx.kforge_exe, ctx.log_dir);
  std::unique_ptr<bench::Executor> executor = std::move(started.executor);
  bench::LocalExecutor* local = started.local;
  const std::string where = started.where;
  opt.jobs = started.jobs;
  ctx.options.jobs = opt.jobs;
  ctx.executor = executor.get();

  auto rows = store.bench_problems(id);
  int done = 0, failed = 0;
  for (const auto& r : rows)
    if (r.status == "done") {
      ++done;
      failed += !r.outcome.value("correct", false);
    }
  bench::BenchProgress progress(isatty(STDERR_FILENO) && !global.quiet, static_cast<int>(rows.size()), done, failed,
                                opt.jobs);
  ctx.progress = &progress;
  if (local) local->report_to([&progress](const std::string& message) { progress.event(message); });
  if (opt.mode == "llm" && opt.executor == "local" && opt.jobs > 1 && std::count(opt.devices.begin(), opt.devices.end(), "cpu"))
    progress.event("note: with --jobs > 1 on the CPU, the runs' timings disturb each other; use --jobs 1 for figures to compare");
  progress.event(fmt::format("bench {}{}: {} problems ({} done) on {} with {}, {} at a time (resume with `kforge bench --resume {}`)",
                             id, resume > 0 ? " resumed" : "", rows.size(), done, where,
                             opt.mode == "llm" ? opt.run.llm : "candidates from " + opt.candidates_dir, opt.jobs, id));
  bench::BenchOutcome outcome = bench::run_bench(ctx);
  progress.finish();
  json env = environment(e.python);
  if (resume > 0 && started_with.is_array()) {  // the report names the bench's own settings, not the resume
    resumed_with.push_back(env["command_line"]);
    env["command_line"] = started_with;
    env["resumed_with"] = resumed_with;
  }
  store.set_bench_status(id, outcome.status, {{"wall_seconds", outcome.wall_seconds}, {"environment", env}});

  json doc = bench::build_bench_report(store, id);
  auto written = write_bench_reports(doc, opt.out_dir);
  a.out.write_json(doc);
  if (!outcome.environment_error.empty()) {
    fmt::print(stderr, "kforge: environment error: {}\n(`kforge doctor` checks this machine; then: kforge bench --resume {})\n",
               outcome.environment_error, id);
    return kExitEnvironment;
  }
  if (outcome.status != "finished") {
    fmt::print(stderr, "kforge: bench {} interrupted with {} of {} problems done\nresume with: kforge bench --resume {}\n",
               id, outcome.done, outcome.total, id);
    return kExitFailed;
  }
  std::FILE* text = a.out.text();
  fmt::print(text, "{}", bench::terminal_summary(doc));
  for (const auto& w : written) fmt::print(text, "report: {}\n", w);
  return kExitOk;
}

}  // namespace

void register_bench_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<BenchArgs>();
  auto& o = a->options.run;
  CLI::App* cmd = app.add_subcommand("bench", "Run a suite of problems end to end and report its metrics");
  cmd->add_option("suite", a->options.suite, "Problems: a directory of KernelBench-format files, a list file or a glob");
  auto* llm = cmd->add_option("--llm", o.llm, "Generate with this model (KIND:ARGUMENT, as for `kforge run`)");
  cmd->add_option("--candidates", a->options.candidates_dir,
                  "Evaluate the files of DIR instead, DIR/<problem file name> for each problem")->excludes(llm);
  add_executor_flags(cmd, a->executor, a->options.jobs, "Problems in progress at once (0: 1 on the CPU, 2 per GPU)");
  cmd->add_option("--device", a->device_list, "Devices, comma-separated (cuda:0,cuda:1); default: the target's");
  cmd->add_option("--resume", a->resume, "Continue bench BENCH (N or bench-N) from the store, with its stored settings");
  cmd->add_option("-o,--out", a->options.out_dir, "Output directory (default ./kforge-out/bench-N)");
  add_db_option(cmd, a->db);
  // Settings of each problem's `kforge run` (llm mode) and evaluations (both modes).
  cmd->add_option("--llm-base-url", o.llm_base_url, "Server for openai:/anthropic:");
  cmd->add_option("--samples", o.samples, "Independent candidates per round")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--rounds", o.rounds, "Rounds per problem, the first generation round included")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--max-fix", o.max_fix, "Functional retries per candidate")->check(CLI::Range(0, 50))->capture_default_str();
  cmd->add_option("--token-budget", o.max_tokens, "Per problem: stop starting rounds after this many tokens (0: no limit)")->capture_default_str();
  cmd->add_option("--cost-budget", o.max_cost_usd, "Per problem: stop starting rounds after this cost in USD (0: no limit)")->capture_default_str();
  cmd->add_option("--time-limit", o.time_limit_s, "Per problem: stop starting rounds after this many seconds (0: no limit)")->capture_default_str();
  cmd->add_option("--patience", o.patience, "Stop a problem after this many rounds without improvement (0: never)")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature sent to the model");
  cmd->add_option("--prompts", o.prompts_dir, "Directory of prompt templates (default: the bundled prompts/)");
  add_eval_flags(cmd, a->flags, EvalCommand::kBench);
  add_json_option(cmd, a->out, "the bench report (as report.json)");
  cmd->callback([a, cmd, &global, exit_code] {
    // A resumed bench keeps the settings it was started with (its output folder included).
    if (!a->resume.empty()) reject_settings_with_resume(*cmd, {"resume", "llm", "db", "json", "executor", "ray-address"}, "bench");
    *exit_code = run_bench_command(*a, global);
  });
}

}  // namespace kforge

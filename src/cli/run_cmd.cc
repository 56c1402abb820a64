// `kforge run PROBLEM --target T --llm KIND:MODEL`: the two-agent refinement loop (src/loop/),
// from a PyTorch reference to a verified, faster kernel. `kforge run --resume RUN` continues a
// run that was interrupted or killed, from the store. Writes the best candidate as a standalone
// file, a JSON summary and a Markdown report (docs/loop.md).
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/prompt_renderer.h"
#include "bench/relayed_evaluations.h"
#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "cli/resume.h"
#include "cli/store_ids.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "llm/cancel.h"
#include "llm/provider_factory.h"
#include "llm/usage.h"
#include "loop/refine_loop.h"
#include "loop/run_summary.h"
#include "loop/standalone.h"
#include "store/store.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/hash.h"
#include "util/paths.h"
#include "util/provenance.h"
#include "util/files.h"
#include "eval/eval_result.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct RunArgs {
  loop::RunOptions options;
  EvalFlags flags;
  std::string problem;
  std::optional<double> temperature;
  bool no_profile = false;
  std::string resume;  // N or run-N
  std::string record, db;
  bool relay_evaluations = false;  // internal: a bench's executor evaluates (bench/relayed_evaluations.h)
  ResultOutput out;
};

// Writes best.py (standalone), summary.json and report.md; returns the summary.
json write_outputs(const Store& store, std::int64_t run_id, const loop::RunOptions& opt,
                   const std::optional<loop::BestCandidate>& best) {
  fs::path out = opt.out_dir;
  fs::create_directories(out);
  json summary = loop::build_summary(store, run_id);
  if (best) {
    std::string header = fmt::format(
        "kforge run {}: best candidate for {} on the {} target ({}).\n{}\n"
        "Drop-in replacement for the reference: construct ModelNew (also bound to Model) with the same arguments.\n"
        "kforge target: {}",
        run_id, fs::path(opt.problem).filename().string(), opt.target, best->step, loop::verdict_text(summary),
        opt.target);
    std::string standalone = loop::make_standalone(best->source, data_dir() / "worker" / "kforge_kernels", header);
    std::ofstream(out / "best.py") << standalone;
    summary["best_file"] = (out / "best.py").string();
  }
  std::ofstream(out / "summary.json") << summary.dump(2) << "\n";
  std::ofstream(out / "report.md") << loop::markdown_report(summary);
  return summary;
}

// The bench that starts a run with --relay-evaluations answers on stdin what it is asked on fd 3
// (the run's reply pipe). Checked before anything here opens a file, which could take fd 3.
void check_relay_pipes() {
  struct stat st{};
  if (fstat(3, &st) != 0 || !S_ISFIFO(st.st_mode))
    throw InputError("--relay-evaluations is for the runs `kforge bench` starts (it needs the bench's pipes)");
}

int run_run(RunArgs& a, const GlobalOptions& global) {
  if (a.relay_evaluations) check_relay_pipes();
  setup_logging(global);
  llm::install_sigint_handler();
  Config config = load_config(global.config_path);
  auto registry = TargetRegistry::load(data_dir() / "targets");
  fs::path db = store_path(a.db, config);
  Store store(db);

  loop::RunOptions opt;
  const std::int64_t resume = a.resume.empty() ? 0 : parse_id_of_kind(a.resume, IdKind::kRun);
  std::int64_t run_id = resume;
  if (resume > 0) {
    auto run = store.run(resume);
    if (!run) throw InputError(fmt::format("no run {} in {}", resume, db.string()));
    opt = loop::options_from_json(run->options);
    if (!a.options.llm.empty()) opt.llm = a.options.llm;  // e.g. a transcript that moved
    if (sha256_hex(read_file(opt.problem)) != run->problem_sha256)
      throw InputError(fmt::format("{} changed since run {} started; start a new run", opt.problem, run_id));
    store.set_run_status(run_id, "running");
  } else {
    if (a.problem.empty()) throw InputError("give a PROBLEM file, or --resume RUN");
    opt = a.options;
    if (!fs::is_regular_file(a.problem)) throw InputError(fmt::format("problem file not found: {}", a.problem));
    opt.problem = fs::absolute(a.problem).lexically_normal().string();
    if (!opt.transfer_from.empty()) {
      if (!fs::is_regular_file(opt.transfer_from))
        throw InputError(fmt::format("--transfer-from file not found: {}", opt.transfer_from));
      opt.transfer_from = fs::absolute(opt.transfer_from).lexically_normal().string();
    }
    apply_eval_flags(a.flags, opt);
    const Target& target = registry.get(opt.target);  // an unknown target fails before a run is created
    // A run needs correctness verdicts: compile-only that only builds would never give one.
    if (opt.compile_only && target.compile_only.mode != CompileOnlyMode::kInterpreter)
      throw InputError(fmt::format("kforge run --compile-only needs a target whose compile-only mode is an interpreter "
                                   "(correctness checked on the CPU); '{}' has mode \"{}\"",
                                   opt.target, compile_only_mode_name(target.compile_only.mode)));
    opt.profile = !a.no_profile && !opt.compile_only;  // an interpreter run has no device to profile on
    opt.temperature = a.temperature;
    if (opt.llm.empty()) opt.llm = config.get_string("llm.provider").value_or("");
    if (opt.llm.empty()) throw InputError("no model: pass --llm KIND:MODEL or set [llm] provider in kforge.toml");
    run_id = store.create_run(opt.problem, sha256_hex(read_file(opt.problem)), opt.target, opt.llm, loop::to_json(opt));
    if (opt.out_dir.empty()) opt.out_dir = (fs::current_path() / "kforge-out" / fmt::format("run-{}", run_id)).string();
    else opt.out_dir = fs::absolute(opt.out_dir).string();
    // Stored again with the resolved output directory (the run id is only known now).
    store.set_run_status(run_id, "running", json{{"options", loop::to_json(opt)}});
  }
  if (resume > 0 && opt.out_dir.empty())
    opt.out_dir = store.run(run_id)->summary.value("options", json::object()).value("out_dir", "");
  if (opt.out_dir.empty()) opt.out_dir = (fs::current_path() / "kforge-out" / fmt::format("run-{}", run_id)).string();

  llm::ProviderOptions popt;
  popt.spec = opt.llm;
  popt.base_url = opt.llm_base_url;
  popt.record_path = a.record;
  popt.replay_by_position = opt.replay_by_position;
  popt.meter = std::make_shared<llm::UsageMeter>();
  auto provider = llm::make_provider(popt, config);

  loop::RunContext ctx;
  ctx.options = opt;
  ctx.run_id = run_id;
  ctx.store = &store;
  ctx.provider = provider.get();
  ctx.prompts = agent::PromptLibrary::load(opt.prompts_dir.empty() ? data_dir() / "prompts" : fs::path(opt.prompts_dir));
  ctx.target = registry.get(opt.target);
  EvalOptions& e = ctx.eval_base;
  e.problem = opt.problem;
  if (kernels_only(opt.kernels_only, config)) ctx.target.allowed_torch_calls.clear();
  e.target = ctx.target;
  e.device = opt.device.empty() ? ctx.target.device : opt.device;
  apply_run_options(opt, e);
  apply_config(config, opt.python, e);
  // Beside the store the run id comes from: two stores (--db) both have a run 1, and their runs must
  // not write candidates into one folder.
  ctx.work_dir = db.parent_path() / "runs" / std::to_string(run_id);
  loop::Progress progress(isatty(STDERR_FILENO) && !global.quiet);
  ctx.progress = &progress;
  ctx.cancel = &llm::global_cancel_flag();
  ctx.provider_spawns_processes = llm::parse_provider_spec(opt.llm).kind == "exec";
  std::optional<bench::RelayedEvaluations> relayed;
  if (a.relay_evaluations) {
    relayed.emplace(STDIN_FILENO, 3);
    ctx.evaluations = &*relayed;
  }

  progress.event(fmt::format("run {}{}: {} on {} with {} (resume with `kforge run --resume {}`)", run_id,
                             resume > 0 ? " resumed" : "", fs::path(opt.problem).filename().string(), opt.target,
                             opt.llm, run_id));
  loop::RunOutcome outcome = loop::run_refinement(ctx);
  progress.finish();

  json status_summary = {{"stop_reason", outcome.stop_reason}, {"message", outcome.message},
                         {"options", loop::to_json(opt)}, {"environment", environment(e.python)}};
  store.set_run_status(run_id, outcome.status, status_summary);
  json summary = write_outputs(store, run_id, opt, outcome.best);

  a.out.write_json(summary);
  if (outcome.status != "finished") {
    fmt::print(stderr, "kforge: run {} {}: {}\nresume with: kforge run --resume {}\n", run_id, outcome.status,
               outcome.message, run_id);
    return outcome.stop_reason == status::kEnvironmentError ? kExitEnvironment : kExitFailed;
  }
  std::FILE* text = a.out.text();
  fmt::print(text, "{}", loop::text_report(summary));
  if (summary.contains("best_file")) fmt::print(text, "best candidate: {}\n", summary["best_file"].get<std::string>());
  fmt::print(text, "summary: {}\nreport:  {}\n", (fs::path(opt.out_dir) / "summary.json").string(),
             (fs::path(opt.out_dir) / "report.md").string());
  return outcome.best ? kExitOk : kExitFailed;
}

}  // namespace

void register_run_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<RunArgs>();
  auto& o = a->options;
  CLI::App* cmd = app.add_subcommand("run", "Refine a PyTorch reference into a verified, faster kernel with an LLM");
  cmd->add_option("problem", a->problem, "Reference problem (.py with Model, get_inputs, get_init_inputs)");
  cmd->add_option("--llm", o.llm, "Model as KIND:ARGUMENT (openai:, anthropic:, exec:, manual:, replay:); default [llm] provider");
  cmd->add_option("--llm-base-url", o.llm_base_url, "Server for openai:/anthropic:");
  cmd->add_flag("--replay-by-position", o.replay_by_position, "replay: answer requests in recorded order");
  cmd->add_option("--record", a->record, "Also write every LLM call to this JSONL transcript");
  cmd->add_option("--resume", a->resume, "Continue run RUN (N or run-N) from the store, with its stored settings");
  cmd->add_option("--transfer-from", o.transfer_from, "A working kernel from another platform to port (cross-platform transfer)");
  cmd->add_option("--samples", o.samples, "Independent candidates per round")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--jobs", o.jobs, "Correctness evaluations at once (0: min(samples, CPUs)); timing is always one at a time")
      ->check(CLI::Range(0, 64))->capture_default_str();
  cmd->add_option("--rounds", o.rounds, "Rounds in all, the first generation round included")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--max-fix", o.max_fix, "Functional retries per candidate")->check(CLI::Range(0, 50))->capture_default_str();
  cmd->add_option("--token-budget", o.max_tokens, "Stop starting rounds after this many LLM tokens (0: no limit)")->capture_default_str();
  cmd->add_option("--cost-budget", o.max_cost_usd, "Stop starting rounds after this LLM cost in USD (0: no limit)")->capture_default_str();
  cmd->add_option("--time-limit", o.time_limit_s, "Stop starting rounds after this many seconds (0: no limit)")->capture_default_str();
  cmd->add_option("--patience", o.patience, "Stop after this many optimisation rounds without improvement (0: never)")->capture_default_str();
  cmd->add_option("--sol-stop", o.sol_stop, "Stop once the best reaches this fraction of speed-of-light (0: never)")->capture_default_str();
  cmd->add_option("--min-gain", o.min_gain, "Smallest relative speedup over the best that counts")->capture_default_str();
  cmd->add_option("--max-tokens", o.reply_max_tokens, "Reply length limit per LLM call (0: [llm] max_tokens)")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature sent to the model");
  add_eval_flags(cmd, a->flags, EvalCommand::kRun);
  cmd->add_flag("--no-profile", a->no_profile, "Do not profile the best candidate for the performance analysis");
  cmd->add_option("--prompts", o.prompts_dir, "Directory of prompt templates (default: the bundled prompts/)");
  cmd->add_option("-o,--out", o.out_dir, "Output directory (default ./kforge-out/run-N)");
  add_db_option(cmd, a->db);
  add_json_option(cmd, a->out, "the run's summary (as summary.json)");
  cmd->add_flag("--relay-evaluations", a->relay_evaluations, "Send evaluations to the bench that started this run")
      ->group("");  // internal: `kforge bench` with an executor that relays runs (docs/bench.md#executors)
  cmd->callback([a, cmd, &global, exit_code] {
    // A resumed run keeps the settings it was started with; a different one would be ignored.
    if (!a->resume.empty()) reject_settings_with_resume(*cmd, {"resume", "llm", "record", "db", "json", "relay-evaluations"}, "run");
    *exit_code = run_run(*a, global);
  });
}

}  // namespace kforge

// `kforge model MODEL --target T --llm KIND:MODEL`: a user's whole model made faster end to end.
// The worker profiles the model and cuts it into regions written as problems (kforge_worker.model
// analyze); the top regions by share each go through `kforge run`, the same loop and store as
// any problem; the worker then installs their best kernels into the model, verifies the whole model
// against the original and measures it end to end (finish). Everything lands in kforge-out/model-N,
// and `kforge model --resume N` continues where it stopped (docs/model.md).
#include <chrono>
#include <fstream>
#include <mutex>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "bench/run_scheduler.h"
#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/executor_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/resume.h"
#include "cli/result_output.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "eval/device_lock.h"
#include "llm/cancel.h"
#include "model/child_process.h"
#include "model/model_plan.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/files.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct ModelArgs {
  model::ModelOptions options;
  std::string python;
  std::string resume;
  // Passed to each region's `kforge run` when given.
  int rounds = 0, samples = 0, max_fix = -1, patience = -1;
  std::string seed;
  bool no_compile_baseline = false, no_profile = false, no_e2e_compile = false;
  std::vector<std::string> run_args;
  ExecutorFlags executor;           // --executor, --ray-address (cli/executor_flags.h)
  int jobs = 0;
  double budget_minutes = 0;
  bool jobs_given = false, budget_given = false;  // on a resume, they replace the stored ones
  ResultOutput out;
};

json read_json(const fs::path& path) { return json::parse(read_file(path)); }

void write_json(const fs::path& path, const json& j) { std::ofstream(path) << j.dump(2) << "\n"; }

// The model's profile and its end-to-end measurement time the device, so they hold its timing lock
// as an evaluation's timing does (eval/device_lock.h): another kforge process timing on the same
// GPU meanwhile would slow both and corrupt the figures. What was waited is kept in `state` (for
// report.json) under the step's name; a device that needs no lock records nothing.
std::optional<DeviceLock> lock_device(const std::string& device, const Target& target, const std::string& step, json& state) {
  auto lock = DeviceLock::acquire(device, target.device_lock, state_dir() / "locks", [&](const fs::path& path) {
    fmt::print(stderr, "kforge model: waiting for {} (another kforge process is timing on {})\n", path.string(), device);
  });
  if (lock) state["device_lock"][step] = {{"path", lock->path().string()}, {"waited_seconds", lock->waited_seconds()}};
  return lock;
}

// The executor, --jobs and --budget-minutes: a new model's, or on a resume the stored ones unless given
// again (where its evaluations run and how many at once change no result's meaning).
void settle_schedule(const ModelArgs& a, const Config& config, model::ModelOptions& opt) {
  if (a.jobs_given) opt.jobs = a.jobs;
  if (a.budget_given) opt.budget_minutes = a.budget_minutes;
  choose_executor(a.executor, config, !model::has_flag(opt.run_args, "--no-sandbox"), !opt.device.empty(), opt.executor,
                  opt.ray_address);
}

// kforge-out/model-N from N, model-N or a folder.
fs::path resume_dir(const std::string& what) {
  fs::path dir = what;
  if (!what.empty() && what.find_first_not_of("0123456789") == std::string::npos)
    dir = fs::current_path() / "kforge-out" / fmt::format("model-{}", what);
  else if (what.rfind("model-", 0) == 0 && !fs::exists(dir))
    dir = fs::current_path() / "kforge-out" / what;
  if (!fs::is_regular_file(dir / "model.json"))
    throw InputError(fmt::format("--resume {}: no model.json in {}", what, dir.string()));
  return dir;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}+00:00", fmt::gmtime(std::chrono::system_clock::to_time_t(now)), ms);
}

std::string share_text(double share) { return fmt::format("{:.1f}%", 100 * share); }

int run_model(ModelArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  llm::install_sigint_handler();  // a region's run stops at Ctrl-C; this command then says how to resume
  Config config = load_config(global.config_path);
  auto registry = TargetRegistry::load(data_dir() / "targets");
  model::ModelOptions opt;
  json state;
  fs::path out;
  if (!a.resume.empty()) {
    out = resume_dir(a.resume);
    state = read_json(out / "model.json");
    opt = model::options_from_json(state.at("options"));
    if (!a.options.llm.empty()) opt.llm = a.options.llm;
    if (!a.options.regions.empty()) opt.regions = a.options.regions;  // e.g. a misspelt one put right
    if (a.options.replay_by_position) opt.replay_by_position = true;
    settle_schedule(a, config, opt);
    state["options"] = model::to_json(opt);
    write_json(out / "model.json", state);
  } else {
    opt = a.options;
    if (opt.model.empty() == opt.hf_config.empty())
      throw InputError(opt.model.empty() ? "give a MODEL file, --hf-config ARCH, or --resume N"
                                         : "give a MODEL file or --hf-config ARCH, not both");
    if (!opt.model.empty() && !fs::is_regular_file(opt.model)) throw InputError(fmt::format("model file not found: {}", opt.model));
    if (!opt.model.empty()) opt.model = fs::absolute(opt.model).lexically_normal().string();
    registry.get(opt.target);  // an unknown target fails before anything runs
    if (opt.llm.empty()) opt.llm = config.get_string("llm.provider").value_or("");
    if (opt.llm.empty() && opt.top > 0)
      throw InputError("no model: pass --llm KIND:MODEL or set [llm] provider in kforge.toml (or --top 0: no region runs)");
    if (a.rounds > 0) opt.run_args.insert(opt.run_args.end(), {"--rounds", std::to_string(a.rounds)});
    if (a.samples > 0) opt.run_args.insert(opt.run_args.end(), {"--samples", std::to_string(a.samples)});
    if (a.max_fix >= 0) opt.run_args.insert(opt.run_args.end(), {"--max-fix", std::to_string(a.max_fix)});
    if (a.patience >= 0) opt.run_args.insert(opt.run_args.end(), {"--patience", std::to_string(a.patience)});
    if (!a.seed.empty()) opt.run_args.insert(opt.run_args.end(), {"--seed", a.seed});
    if (a.no_compile_baseline) opt.run_args.push_back("--no-compile-baseline");
    if (a.no_profile) opt.run_args.push_back("--no-profile");
    opt.run_args.insert(opt.run_args.end(), a.run_args.begin(), a.run_args.end());
    opt.e2e_compile = !a.no_e2e_compile;
    settle_schedule(a, config, opt);
    if (!opt.db.empty()) opt.db = fs::absolute(opt.db).string();
    if (!opt.record_dir.empty()) {
      opt.record_dir = fs::absolute(opt.record_dir).lexically_normal().string();
      fs::create_directories(opt.record_dir);
    }
    out = opt.out_dir.empty() ? model::next_model_dir(fs::current_path() / "kforge-out") : fs::absolute(opt.out_dir);
    opt.out_dir = out.string();
    if (!opt.hf_config.empty()) {
      // The architecture and its --set keys are checked before anything is written; the model file
      // that comes out carries them, so the rest takes it like any model file (and so does a resume).
      const Target& t = registry.get(opt.target);
      EvalOptions probe;
      probe.target = t;
      apply_config(config, a.python, probe);
      const fs::path file = out / "hf_model.py";
      std::vector<std::string> argv = {probe.python, "-m", "kforge_worker.model", "hf-file", opt.hf_config, "--out",
                                       file.string(), "--device", opt.device.empty() ? t.device : opt.device};
      for (const auto& s : opt.sets) argv.insert(argv.end(), {"--set", s});
      auto r = model::run_child(argv, {{"PYTHONPATH", (data_dir() / "worker").string()}});
      if (r.exit_code == 2) throw InputError(fmt::format("--hf-config {}: the reason is above", opt.hf_config));
      if (r.exit_code != 0) throw InternalError(fmt::format("writing the model file for {} failed: {}", opt.hf_config, r.describe()));
      opt.model = file.string();
      opt.sets.clear();  // in the file now
    }
    fs::create_directories(out);
    state = {{"options", model::to_json(opt)}, {"kernels", json::object()}};
    write_json(out / "model.json", state);
  }
  const Target& target = registry.get(opt.target);
  EvalOptions e;
  e.target = target;
  apply_config(config, a.python.empty() ? opt.python : a.python, e);
  if (opt.python != e.python) {  // every region's run uses the model's interpreter
    opt.python = e.python;
    state["options"] = model::to_json(opt);
    write_json(out / "model.json", state);
  }
  const std::map<std::string, std::string> env = {{"PYTHONPATH", (data_dir() / "worker").string()}};
  const std::string device = opt.device.empty() ? target.device : opt.device;
  std::FILE* text = a.out.text();

  // 1. Where the time goes, and the regions as problems.
  if (!fs::is_regular_file(out / "analysis.json")) {
    const auto lock = lock_device(device, target, "analyze", state);
    fmt::print(stderr, "kforge model: profiling {} on {} and cutting it into regions\n", fs::path(opt.model).filename().string(), device);
    std::vector<std::string> argv = {e.python, "-m", "kforge_worker.model", "analyze", opt.model, "--out", out.string(),
                                     "--device", device, "--threads", std::to_string(opt.threads), "--reps",
                                     std::to_string(opt.profile_reps)};
    for (const auto& s : opt.sets) argv.insert(argv.end(), {"--set", s});
    auto r = model::run_child(argv, env);
    if (r.exit_code == 2) throw InputError(fmt::format("{} cannot be analysed (the reason is above)", opt.model));
    if (r.exit_code != 0) throw InternalError(fmt::format("the model's analysis failed: {}", r.describe()));
    write_json(out / "model.json", state);
  }
  const json analysis = read_json(out / "analysis.json");
  const json cap = analysis.value("capture", json::object());
  if (!cap.value("fallback_reason", "").empty())
    fmt::print(stderr, "kforge model: {}; regions are modules seen while the model ran eagerly\n", cap["fallback_reason"].get<std::string>());
  fmt::print(text, "{} regions (graph: {}), eager forward {:.3f} ms:\n", analysis["regions"].size(),
             cap.value("method", "?"), analysis.value("eager_ms", 0.0));
  for (const auto& r : analysis["regions"]) {
    std::string where;
    for (const auto& inst : r["instances"]) {
      const std::string first = inst[0].get<std::string>();
      where += (where.empty() ? "" : "; ") + (first.empty() ? "the model itself" : first) +
               (inst.size() > 1 ? " -> " + inst[1].get<std::string>() : "");
    }
    fmt::print(text, "  {:<10} {:<14} {:>6}  {} call(s)  {}{}\n", r["name"].get<std::string>(), r["kind"].get<std::string>(),
               share_text(r["share"]), r["calls"].get<int>(), where,
               r.contains("skipped") ? " — skipped: " + r["skipped"].get<std::string>() : "");
  }

  // 2. The loop on the regions that matter: `jobs` runs at once, their evaluations where the
  // executor runs them (cli/executor_flags.h), no run started once the loop's budget is used up.
  const std::string kforge = fs::read_symlink("/proc/self/exe").string();
  json& kernels = state["kernels"];
  std::vector<json> todo;
  if (auto unknown = model::unmatched_selectors(analysis, opt.regions); !unknown.empty()) {
    std::string names;
    for (const auto& r : analysis["regions"]) names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", r["name"].get<std::string>(), r["kind"].get<std::string>());
    throw InputError(fmt::format("--regions: no region is named or of kind {}; this model's regions: {} (the analysis is kept: kforge model --resume {} --regions ...)",
                                 fmt::join(unknown, ", "), names, out.string()));
  }
  for (const auto& region : model::top_regions(analysis, opt.top, opt.regions)) {
    json& k = kernels[region["name"].get<std::string>()];
    if (!k.is_object()) k = json::object();
    if (!model::run_done(k)) todo.push_back(region);
  }
  const double budget_s = 60 * opt.budget_minutes;
  const double used_before = state.value("loop_seconds", 0.0);
  const auto loop_start = Clock::now();
  auto loop_seconds = [&] { return used_before + std::chrono::duration<double>(Clock::now() - loop_start).count(); };
  std::vector<std::string> skipped;  // for the budget, in this session
  std::string lost;                  // why the executor can run nothing more
  bool stopped = false;              // Ctrl-C, or a run that stopped to be resumed
  std::string waiting;               // the first run that stopped waiting for the model's reply
  if (!todo.empty()) {
    StartedExecutor started = start_executor(opt.executor, opt.ray_address, opt.jobs, {device}, e, kforge, out);
    const bool relays = bench::relays_runs(started.executor.get());
    fmt::print(stderr, "kforge model: {} region run{} on {}, {} at a time{}\n", todo.size(), todo.size() == 1 ? "" : "s",
               started.where, started.jobs,
               budget_s > 0 ? fmt::format(", {:g} minute(s) of budget ({:.0f} s used)", opt.budget_minutes, used_before) : "");
    if (started.local && started.jobs > 1 && device == "cpu")
      fmt::print(stderr, "kforge model: note: with --jobs > 1 on the CPU, the runs' timings disturb each other\n");
    std::mutex mutex;  // model.json, the kernels and the progress lines
    auto save = [&] {
      state["loop_seconds"] = loop_seconds();
      write_json(out / "model.json", state);
    };
    bench::ScheduleOptions schedule_options;
    schedule_options.jobs = started.jobs;
    schedule_options.devices = {device};
    schedule_options.cancel = &llm::global_cancel_flag();
    bench::schedule(todo.size(), schedule_options, [&](std::size_t i, const std::string&) {
      const json& region = todo[i];
      const std::string name = region["name"];
      const fs::path run_dir = out / "runs" / name;
      std::vector<std::string> argv;
      std::int64_t resume_run = 0;
      {
        std::lock_guard lock(mutex);
        json& k = kernels[name];
        const double left = budget_s - loop_seconds();
        if (budget_s > 0 && left <= 0) {
          const json earlier_run = k.value("run", json());  // continued when a resume has budget for it
          k = model::skipped_for_budget(opt.budget_minutes);
          if (earlier_run.is_number()) k["run"] = earlier_run;
          skipped.push_back(name);
          save();
          fmt::print(stderr, "kforge model: {}: skipped, the loop's budget of {:g} minute(s) is used up\n", name, opt.budget_minutes);
          return true;  // the regions after it are skipped the same way
        }
        resume_run = k.value("run", 0);
        argv = model::run_argv(kforge, opt, region, run_dir, resume_run);
        if (resume_run == 0) {  // a resumed run keeps the settings it was started with
          // The run stops starting rounds when the loop's budget ends (its round in progress ends as usual).
          if (budget_s > 0) argv = model::with_time_limit(std::move(argv), left);
          // A profile runs the candidate on this host, where a relayed run's evaluations do not run.
          if (relays && !model::has_flag(argv, "--no-profile")) argv.push_back("--no-profile");
        }
        if (global.config_path) argv.insert(argv.begin() + 1, {"--config", global.config_path->string()});
        fmt::print(stderr, "kforge model: {} ({}, {} of the time): kforge run{} (log: {})\n", name, region["kind"].get<std::string>(),
                   share_text(region["share"]), resume_run > 0 ? fmt::format(" --resume {}", resume_run) : "",
                   (run_dir / "run.log").string());
        fs::create_directories(run_dir);
        fs::remove(run_dir / "summary.json");  // an earlier session's: what this run writes is read below
      }
      const std::string started_at = utc_now();
      const auto start = Clock::now();
      bench::ChildRunResult r = bench::run_child_run(argv, run_dir / "run.log", started.executor.get(), &llm::global_cancel_flag());
      std::lock_guard lock(mutex);
      json& k = kernels[name];
      if (fs::is_regular_file(run_dir / "summary.json")) {
        k = model::kernel_entry(read_json(run_dir / "summary.json"));
      } else {
        std::string log;
        try {
          log = read_file(run_dir / "run.log");
        } catch (const std::exception&) {
        }
        const std::string said = model::error_line_in_log(log);
        k = {{"status", "error"}, {"error", fmt::format("kforge run {}{}; see {}", r.exit.describe(), said.empty() ? "" : " (" + said + ")",
                                                       (run_dir / "run.log").string())}};
        // The run it created is continued by the next --resume.
        if (const std::int64_t id = resume_run > 0 ? resume_run : model::run_id_in_log(log); id > 0) k["run"] = id;
      }
      k["started_at"] = started_at;
      k["ended_at"] = utc_now();
      k["wall_seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
      if (!r.node.empty()) k["node"] = r.node;
      save();
      fmt::print(stderr, "kforge model: {}: run {} {}{}{}\n", name, k.value("run", 0), k.value("status", "?"),
                 k.contains("speedup") && k["speedup"].is_number() ? fmt::format(", best {:.2f}x", k["speedup"].get<double>()) : "",
                 k.contains("error") ? ": " + k["error"].get<std::string>() : "");
      if (!r.lost.empty() && !model::run_done(k)) {
        if (lost.empty()) lost = r.lost;
        return false;  // not the region's failure: left for --resume
      }
      // Interrupted, or waiting for the model's reply: the model stops to be resumed rather than finish without it.
      const bool interrupted = llm::is_cancelled(&llm::global_cancel_flag()) || r.interrupted;
      if (interrupted || model::run_resumable(k)) {
        stopped = true;
        if (interrupted || k.value("stop_reason", "") != "llm_error") return false;
        // Waiting for the model's reply: the other regions' runs still start, so that one round of
        // answers (`manual:`, one folder per region) serves every region rather than one at a time.
        waiting += fmt::format("{}{}'s run is waiting for the model's reply (see {})", waiting.empty() ? "" : "; ", name,
                               (run_dir / "run.log").string());
        return true;
      }
      return true;  // a failed region is recorded; the others go on
    });
    save();
  }
  if (budget_s > 0) {
    state["budget"] = {{"minutes", opt.budget_minutes}, {"used_seconds", state.value("loop_seconds", 0.0)},
                       {"skipped", skipped}};
    write_json(out / "model.json", state);
  }
  if (!lost.empty()) {
    fmt::print(stderr, "kforge: model stopped: {}\nresume with: kforge model --resume {}\n", lost, out.string());
    return kExitFailed;
  }
  if (stopped || llm::is_cancelled(&llm::global_cancel_flag())) {
    if (!waiting.empty())
      fmt::print(stderr, "kforge: model stopped: {}; resume with: kforge model --resume {}\n", waiting, out.string());
    else
      fmt::print(stderr, "kforge: model interrupted; resume with: kforge model --resume {}\n", out.string());
    return kExitFailed;
  }
  if (!skipped.empty())
    fmt::print(stderr, "kforge model: {} region(s) skipped for the budget ({}): the loop's {:g} minute(s) were used up; "
               "`kforge model --resume {} --budget-minutes M` runs them with a larger budget\n",
               skipped.size(), fmt::join(skipped, ", "), opt.budget_minutes, out.string());

  // 3. Back into the model: installed, verified and measured end to end.
  write_json(out / "kernels.json", kernels);
  const auto lock = lock_device(device, target, "finish", state);
  fmt::print(stderr, "kforge model: installing the kernels, verifying the model and measuring it end to end\n");
  std::vector<std::string> argv = {e.python, "-m", "kforge_worker.model", "finish", "--out", out.string(), "--kernels",
                                   (out / "kernels.json").string(), "--threads", std::to_string(opt.threads), "--reps",
                                   std::to_string(opt.e2e_reps)};
  if (!opt.e2e_compile) argv.push_back("--no-compile");
  auto r = model::run_child(argv, env);
  if (r.exit_code != 0 || !fs::is_regular_file(out / "report.json"))
    throw InternalError(fmt::format("installing and measuring the kernels failed: {}", r.describe()));
  json report = read_json(out / "report.json");
  report["options"] = model::to_json(opt);
  report["runs"] = kernels;
  if (state.contains("device_lock")) report["device_lock"] = state["device_lock"];
  write_json(out / "report.json", report);
  state["finished"] = true;
  write_json(out / "model.json", state);
  a.out.write_json(report);
  fmt::print(text, "\n{}\nreport: {}\npatch:  {}\n", read_file(out / "report.md"), (out / "report.md").string(),
             (out / "patch.py").string());
  return kExitOk;
}

}  // namespace

void register_model_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<ModelArgs>();
  auto& o = a->options;
  CLI::App* cmd = app.add_subcommand("model", "Make a whole model faster: its regions through the loop, verified and measured end to end");
  cmd->add_option("model", o.model, "Model file (.py with get_model() and get_inputs(), or a KernelBench problem)");
  cmd->add_option("--hf-config", o.hf_config, "A Hugging Face transformers architecture (llama, mistral, qwen2...) built from its config with random weights, instead of MODEL");
  cmd->add_option("--set", o.sets, "Override a module-level size of the model file, or with --hf-config a config key or batch_size, seq_len, decode_steps, dtype (NAME=VALUE, repeatable)");
  cmd->add_option("--target", o.target, "Target platform (see `kforge targets`)")->capture_default_str();
  cmd->add_option("--device", o.device, "Device (default: the target's)");
  cmd->add_option("--llm", o.llm, "Model as KIND:ARGUMENT (openai:, anthropic:, exec:, manual:, replay:); default [llm] provider");
  cmd->add_option("--top", o.top, "Regions through the loop, by share of the time")->check(CLI::Range(0, 100))->capture_default_str();
  cmd->add_option("--regions", o.regions, "Only these regions go through the loop: names (region-3) or kinds (norm, attention, gemm+epilogue), comma-separated; --top counts among them")
      ->delimiter(',');
  cmd->add_option("--rounds", a->rounds, "Rounds of each region's run (default: kforge run's)")->check(CLI::Range(1, 1000));
  cmd->add_option("--samples", a->samples, "Candidates per round of each region's run")->check(CLI::Range(1, 64));
  cmd->add_option("--max-fix", a->max_fix, "Functional retries per candidate")->check(CLI::Range(0, 50));
  cmd->add_option("--patience", a->patience, "Rounds without improvement before a region's run stops")->check(CLI::Range(0, 1000));
  cmd->add_option("--seed", a->seed, "Seed of each region's run");
  cmd->add_option("--threads", o.threads, "CPU threads for the model and every evaluation (0: PyTorch's default)")->capture_default_str();
  cmd->add_flag("--no-compile-baseline", a->no_compile_baseline, "Region runs: no torch.compile baseline");
  cmd->add_flag("--no-profile", a->no_profile, "Region runs: no profile of the best candidate");
  cmd->add_option("--run-arg", a->run_args, "Another option for each region's `kforge run` (repeatable: --run-arg=--eval-reps --run-arg=15)");
  cmd->add_option("--profile-reps", o.profile_reps, "Forwards timed to attribute the model's time")->check(CLI::Range(1, 10000))->capture_default_str();
  cmd->add_option("--e2e-reps", o.e2e_reps, "Interleaved forwards per variant end to end")->check(CLI::Range(3, 100000))->capture_default_str();
  cmd->add_flag("--no-e2e-compile", a->no_e2e_compile, "No torch.compile variant end to end");
  add_executor_flags(cmd, a->executor, a->jobs, "Region runs in progress at once (0: 1 on the CPU, 2 per GPU; "
                     "with Ray, 2 per device unit of the cluster)");
  cmd->add_option("--budget-minutes", a->budget_minutes, "Wall time of the regions' runs for the whole model: no region's "
                  "run starts once it is used up, and each run stops starting rounds when it ends (0: no limit)")
      ->check(CLI::Range(0.0, 1e6))->capture_default_str();
  cmd->add_option("--python", a->python, "Interpreter for the worker (default: worker.python, then python3)");
  cmd->add_option("--resume", a->resume, "Continue model N (kforge-out/model-N, or its folder) where it stopped");
  cmd->add_option("-o,--out", o.out_dir, "Output folder (default ./kforge-out/model-N)");
  cmd->add_option("--record", o.record_dir, "Also write each region run's LLM calls to DIR/REGION.jsonl (replay them with --llm replay:DIR)");
  cmd->add_flag("--replay-by-position", o.replay_by_position, "replay: answer each region's requests in recorded order");
  add_db_option(cmd, o.db);
  add_json_option(cmd, a->out, "the report (as report.json)");
  cmd->callback([a, cmd, &global, exit_code] {
    if (!a->resume.empty())
      reject_settings_with_resume(*cmd, {"resume", "llm", "replay-by-position", "json", "python", "executor", "ray-address", "jobs",
                                         "budget-minutes", "regions"},
                                  "model");
    a->jobs_given = cmd->count("--jobs") > 0;
    a->budget_given = cmd->count("--budget-minutes") > 0;
    *exit_code = run_model(*a, global);
  });
}

}  // namespace kforge

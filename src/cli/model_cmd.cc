// `kforge model MODEL --target T --llm KIND:MODEL`: a user's whole model made faster end to end.
// The worker profiles the model and cuts it into regions written as problems (kforge_worker.model
// analyze); the top regions by share each go through `kforge run`, the same loop and store as
// any problem; the worker then installs their best kernels into the model, verifies the whole model
// against the original and measures it end to end (finish). Everything lands in kforge-out/model-N,
// and `kforge model --resume N` continues where it stopped (docs/model.md).
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/resume.h"
#include "cli/result_output.h"
#include "cli/store_path.h"
#include "config/config.h"
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
  ResultOutput out;
};

json read_json(const fs::path& path) { return json::parse(read_file(path)); }

void write_json(const fs::path& path, const json& j) { std::ofstream(path) << j.dump(2) << "\n"; }

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
    if (!opt.db.empty()) opt.db = fs::absolute(opt.db).string();
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
    fmt::print(stderr, "kforge model: profiling {} on {} and cutting it into regions\n", fs::path(opt.model).filename().string(), device);
    std::vector<std::string> argv = {e.python, "-m", "kforge_worker.model", "analyze", opt.model, "--out", out.string(),
                                     "--device", device, "--threads", std::to_string(opt.threads), "--reps",
                                     std::to_string(opt.profile_reps)};
    for (const auto& s : opt.sets) argv.insert(argv.end(), {"--set", s});
    auto r = model::run_child(argv, env);
    if (r.exit_code == 2) throw InputError(fmt::format("{} cannot be analysed (the reason is above)", opt.model));
    if (r.exit_code != 0) throw InternalError(fmt::format("the model's analysis failed: {}", r.describe()));
  }
  const json analysis = read_json(out / "analysis.json");
  const json cap = analysis.value("capture", json::object());
  if (!cap.value("fallback_reason", "").empty())
    fmt::print(stderr, "kforge model: {}; regions are modules seen while the model ran eagerly\n", cap["fallback_reason"].get<std::string>());
  fmt::print(text, "{} regions (graph: {}), eager forward {:.3f} ms:\n", analysis["regions"].size(),
             cap.value("method", "?"), analysis.value("eager_ms", 0.0));
  for (const auto& r : analysis["regions"]) {
    std::string where;
    for (const auto& inst : r["instances"]) where += (where.empty() ? "" : "; ") + inst[0].get<std::string>() + (inst.size() > 1 ? " -> " + inst[1].get<std::string>() : "");
    fmt::print(text, "  {:<10} {:<14} {:>6}  {} call(s)  {}{}\n", r["name"].get<std::string>(), r["kind"].get<std::string>(),
               share_text(r["share"]), r["calls"].get<int>(), where,
               r.contains("skipped") ? " — skipped: " + r["skipped"].get<std::string>() : "");
  }

  // 2. The loop on the regions that matter.
  const std::string kforge = fs::read_symlink("/proc/self/exe").string();
  json& kernels = state["kernels"];
  for (const auto& region : model::top_regions(analysis, opt.top)) {
    const std::string name = region["name"];
    const fs::path run_dir = out / "runs" / name;
    json& k = kernels[name];
    if (!k.is_object()) k = json::object();
    if (model::run_done(k)) continue;
    const std::int64_t resume_run = k.value("run", 0);
    auto argv = model::run_argv(kforge, opt, region, run_dir, resume_run);
    if (global.config_path) argv.insert(argv.begin() + 1, {"--config", global.config_path->string()});
    fmt::print(stderr, "kforge model: {} ({}, {} of the time): kforge run{} (log: {})\n", name, region["kind"].get<std::string>(),
               share_text(region["share"]), resume_run > 0 ? fmt::format(" --resume {}", resume_run) : "",
               (run_dir / "run.log").string());
    fs::create_directories(run_dir);
    auto r = model::run_child(argv, {}, run_dir / "run.log");
    if (fs::is_regular_file(run_dir / "summary.json")) {
      k = model::kernel_entry(read_json(run_dir / "summary.json"));
    } else {
      k = {{"status", "error"}, {"error", fmt::format("kforge run {}; see {}", r.describe(), (run_dir / "run.log").string())}};
    }
    write_json(out / "model.json", state);
    fmt::print(stderr, "kforge model: {}: run {} {}{}\n", name, k.value("run", 0), k.value("status", "?"),
               k.contains("speedup") && k["speedup"].is_number() ? fmt::format(", best {:.2f}x", k["speedup"].get<double>()) : "");
    if (llm::is_cancelled(&llm::global_cancel_flag()) || model::run_resumable(k)) {
      if (k.value("stop_reason", "") == "llm_error")
        fmt::print(stderr, "kforge: model stopped: {}'s run is waiting for the model's reply (see {}); resume with: "
                           "kforge model --resume {}\n", name, (run_dir / "run.log").string(), out.string());
      else
        fmt::print(stderr, "kforge: model interrupted; resume with: kforge model --resume {}\n", out.string());
      return kExitFailed;
    }
  }

  // 3. Back into the model: installed, verified and measured end to end.
  write_json(out / "kernels.json", kernels);
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
  cmd->add_option("--python", a->python, "Interpreter for the worker (default: worker.python, then python3)");
  cmd->add_option("--resume", a->resume, "Continue model N (kforge-out/model-N, or its folder) where it stopped");
  cmd->add_option("-o,--out", o.out_dir, "Output folder (default ./kforge-out/model-N)");
  add_db_option(cmd, o.db);
  add_json_option(cmd, a->out, "the report (as report.json)");
  cmd->callback([a, cmd, &global, exit_code] {
    if (!a->resume.empty()) reject_settings_with_resume(*cmd, {"resume", "llm", "json", "python"}, "model");
    *exit_code = run_model(*a, global);
  });
}

}  // namespace kforge

#include "eval/evaluator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <random>
#include <string_view>

#include "eval/correctness.h"
#include "eval/library_share.h"
#include "eval/memory_phase.h"
#include "eval/screening.h"
#include "eval/speed_verdict.h"
#include "eval/timing_phase.h"
#include "eval/worker_pool.h"
#include "util/environment.h"
#include "util/errors.h"
#include "util/files.h"
#include "util/hash.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

std::uint64_t draw_seed(const EvalOptions& opt) {
  if (opt.seed) return *opt.seed;
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 16 ^ rd()) % 2147483647u;
}

void describe(EvalRun& run) {
  const EvalOptions& opt = run.opt;
  json& doc = run.doc;
  doc["schema_version"] = kEvalResultSchemaVersion;
  doc["schema_minor"] = kEvalResultSchemaMinor;
  doc["problem"] = fs::absolute(opt.problem).string();
  doc["problem_sha256"] = sha256_hex(read_file(opt.problem));
  doc["candidate"] = fs::absolute(opt.candidate).string();
  doc["candidate_sha256"] = sha256_hex(read_file(opt.candidate));
  doc["target"] = opt.target.name;
  doc["device"] = opt.device;
  doc["precision"] = opt.precision;
  doc["allowed_torch_calls"] = opt.target.allowed_torch_calls;
  doc["seed"] = run.seed;
  doc["overrides"] = opt.overrides;
  doc["checks"] = json::array();
  doc["notes"] = json::array();
  doc["env"] = {{"python", opt.python}, {"threads", run.threads}, {"log_dir", opt.log_dir.string()}};
}

// docs/checks.md, speed classes: for a timed, correct result, how its speed may be compared.
json speed_class(const EvalRun& run) {
  if (run.status != status::kCorrect || !run.doc.contains("timing") || !run.doc["timing"].contains("candidate"))
    return nullptr;
  if (run.doc.contains("calibration") && run.doc["calibration"].value("degenerate", false)) return "degenerate";
  return run.speed_class.empty() ? "standard" : run.speed_class;
}

// Timing and the speed verdict; the device stays held until the verdict's re-measurements are done.
bool time_and_judge(EvalRun& run, WorkerPool& pool) {
  std::optional<TimingOutcome> timing = time_candidate(run, pool);
  if (!timing || !judge_speed(run, *timing)) return false;
  measure_library_share(run);
  return true;
}

// `alone`: the evaluation must have its device to itself (a retry after an out-of-memory).
EvalResult run_evaluation(const EvalOptions& opt, ProgressFn progress, void* user, WorkerPool& pool, bool alone) {
  auto started = Clock::now();
  EvalRun run(opt, progress, user);
  run.threads = opt.threads > 0 ? opt.threads : available_cpus();
  run.seed = draw_seed(opt);
  describe(run);
  fs::create_directories(opt.log_dir);

  // Seconds spent in each stage, for the harness-overhead benchmark and for users.
  auto lap_start = Clock::now();
  auto lap = [&](const char* stage) {
    auto now = Clock::now();
    run.doc["phases_s"][stage] = Seconds(now - lap_start).count();
    lap_start = now;
  };
  // Compile-only: the target's mode says whether its kernels are only built or run in an interpreter
  // on the CPU (options adjusted in evaluate()).
  const CompileOnlyMode compile_only = opt.compile_only ? opt.target.compile_only.mode : CompileOnlyMode::kNone;
  const bool build_only = compile_only == CompileOnlyMode::kBuild;
  if (opt.compile_only) run.doc["compile_only"] = compile_only_mode_name(compile_only);

  // Screening.
  run.phase("starting workers");
  WorkerPair workers;
  take_workers(run, pool, workers, !build_only);
  fs::copy_file(opt.candidate, run.candidate_file());
  // Readable by the sandbox's unprivileged uid, whatever the user's file mode was.
  fs::permissions(run.candidate_file(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::add);
  json problem_reply;
  if (build_only) compile_candidate_only(run, *workers.cand);
  // Nothing of the problem or the candidate is on the device before its memory is reserved.
  std::optional<MemoryTicket> memory;
  bool loaded = !build_only && worker_ready(run, *workers.ref);
  if (loaded) {
    if (auto ticket = reserve_device_memory(run, 2, alone)) memory.emplace(std::move(*ticket));
    else loaded = false;
  }
  if (!build_only) run.phase("loading problem");
  loaded = loaded && load_problem(run, json(opt.overrides), "main", &problem_reply);
  lap("start_and_load_problem");
  if (loaded) {
    run.doc["globals"] = problem_reply["globals"];
    run.lean_timing = problem_reply.value("lean_timing", false);
    run.pipelined_from = problem_reply.value("pipelined_from", run.lean_timing ? -1 : 0);
    // How tensors travel between the workers (host memfds or device buffers: docs/worker-protocol.md).
    run.doc["env"]["device_transport"] = problem_reply.value("device_transport", "host");
    run.doc["env"]["torch"] = problem_reply.value("torch", "");
    run.main_trials = opt.trials;
    bool candidate_loaded = false;
    std::optional<PendingRequest> first_draw;
    if (static_check(run)) {
      // The two workers overlap: the candidate starts and builds while the reference calibrates.
      PendingRequest loading = send_load_candidate(run, problem_reply);
      bool calibrated = calibrate(run);
      lap("screen_candidate");
      // Trial 0 is drawn while the candidate may still be building.
      if (calibrated) first_draw = send_make_trial(run, "main", 0, true);
      run.phase("compiling and loading candidate");
      candidate_loaded =
          calibrated && worker_ready(run, *workers.cand) && finish_load_candidate(run, run.cand->wait(loading));
    } else {
      lap("screen_candidate");
    }
    lap("load_candidate");

    // Correctness, timing and the speed verdict, then the size variants.
    if (candidate_loaded && run_trials(run, "main", run.main_trials, true, first_draw)) {
      lap("correctness_trials");
      run.correctness.detail["shapes_checked"] = json::array({{{"tag", "main"}, {"globals", problem_reply["globals"]}}});
      bool timed_ok = !opt.timing || time_and_judge(run, pool);
      lap("timing");
      json variants = problem_reply.value("variants", json::array());
      if (variants.empty()) variants = run.extra_variants;
      if (timed_ok) check_shape_variants(run, variants);
      lap("shape_variants");
      if (!run.decided() && !run.static_failure.is_null())
        run.fail(status::kRejected, run.static_failure["name"].get<std::string>(),
                 run.static_failure["message"].get<std::string>());
      if (!run.decided()) run.status = status::kCorrect;
    }
  }
  run.doc["speed_class"] = speed_class(run);
  finish_checks(run);
  if (auto breach = workers.cand ? workers.cand->disk_breach() : std::nullopt) {
    run.add_check("disk_quota", "fail", *breach);
    run.fail(status::kRejected, "disk_quota", *breach);
  }
  run.doc["correctness"] = run.correctness.to_json();
  run.doc["status"] = run.status;
  run.doc["correct"] = run.status == status::kCorrect;
  if (!run.doc.contains("speedup_vs_eager")) run.doc["speedup_vs_eager"] = nullptr;
  if (!run.doc.contains("speedup_vs_compile")) run.doc["speedup_vs_compile"] = nullptr;

  // The reference served this evaluation well unless it failed: then it goes, like every candidate.
  run.ref = run.cand = nullptr;
  pool.give_back(std::move(workers), run.status != status::kProblemError, opt.reference_timeout_s);
  if (memory) release_device_memory(*memory, run.doc);
  lap("shutdown");
  run.doc["wall_seconds"] = Seconds(Clock::now() - started).count();
  EvalResult result;
  result.doc = std::move(run.doc);
  return result;
}

// `opt` evaluated once more after `before` failed (`why`, shown as progress), its logs in `subfolder`
// of the first try's, which stay where that result says they are; what the earlier try ended with
// goes into memory.retries.
EvalResult evaluate_again(const EvalResult& before, EvalOptions opt, const std::string& subfolder,
                          const std::string& why, ProgressFn progress, void* user, WorkerPool& pool) {
  json tried = {{"status", before.doc.value("status", "")}, {"error", before.doc.value("error", json::object())}};
  if (before.doc.contains("memory")) tried["memory"] = before.doc["memory"];
  if (before.doc.contains("env")) tried["device_transport"] = before.doc["env"].value("device_transport", "host");
  spdlog::debug("{}: {}", opt.candidate.filename().string(), why);
  if (progress) progress(why, user);
  opt.log_dir /= subfolder;
  fs::create_directories(opt.log_dir);
  EvalResult result = run_evaluation(opt, progress, user, pool, true);
  if (result.doc.contains("memory")) {
    for (const json& earlier : before.doc.value("memory", json::object()).value("retries", json::array()))
      result.doc["memory"]["retries"].push_back(earlier);
    result.doc["memory"]["retries"].push_back(tried);
  }
  return result;
}

// One evaluation; once more alone if it ran out of memory while sharing its device, and once more
// with its trials in host memory if it ran out of memory with them on the device.
EvalResult evaluate_with_retry(const EvalOptions& opt, ProgressFn progress, void* user, WorkerPool& pool) {
  EvalResult result = run_evaluation(opt, progress, user, pool, false);
  if (retry_alone(result.doc))
    result = evaluate_again(result, opt, "alone", "out of memory beside other evaluations: trying again alone",
                            progress, user, pool);
  const char* transport = std::getenv("KFORGE_DEVICE_TRANSPORT");
  if (retry_on_host_path(result.doc, transport && std::string_view(transport) == "vmm")) {
    EvalOptions on_host = opt;
    on_host.worker_env["KFORGE_DEVICE_TRANSPORT"] = "host";
    result = evaluate_again(result, on_host, "host-path",
                            "out of device memory with the trials on the device: trying again with them in host memory",
                            progress, user, pool);
    result.doc["notes"].push_back("the device path ran out of device memory; evaluated again with the trials in host memory");
  }
  json& doc = result.doc;
  const std::string cause = doc.value("status", "") == status::kProblemError ? doc["error"].value("cause", "") : "";
  if ((cause == "device_oom" || cause == "host_oom") && doc.contains("memory") &&
      !doc["memory"].value("shared_device", true))
    doc["error"]["message"] = fmt::format("the reference alone does not fit {}; {}",
                                          cause == "device_oom" ? "the device" : "the host's memory",
                                          doc["error"].value("message", ""));
  return result;
}

}  // namespace

EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user, WorkerPool* pool) {
  std::optional<WorkerPool> own;
  if (!pool) pool = &own.emplace();
  if (!fs::exists(options.problem))
    throw InputError(fmt::format("problem file not found: {}", options.problem.string()));
  if (!fs::exists(options.candidate))
    throw InputError(fmt::format("candidate file not found: {}", options.candidate.string()));
  const CompileOnlySpec& compile_only = options.target.compile_only;
  if (options.compile_only && compile_only.mode == CompileOnlyMode::kNone)
    throw InputError(fmt::format("target '{}' has no compile-only mode ([compile_only] mode = \"none\" in {}); "
                                 "evaluate it on its hardware instead",
                                 options.target.name, (options.target.dir / "target.toml").string()));
  if (options.compile_only && compile_only.mode == CompileOnlyMode::kInterpreter) {
    // No device needed: check correctness with the target's interpreter on the CPU, without timing.
    EvalOptions on_cpu = options;
    on_cpu.device = "cpu";
    on_cpu.timing = false;
    for (const auto& [name, value] : compile_only.env) on_cpu.worker_env[name] = value;
    return evaluate_with_retry(on_cpu, progress, user, *pool);
  }
  return evaluate_with_retry(options, progress, user, *pool);
}

}  // namespace kforge

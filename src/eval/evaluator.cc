#include "eval/evaluator.h"

#include <sched.h>

#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "eval/compile_log.h"
#include "eval/timing_stats.h"
#include "eval/worker_client.h"
#include "eval/worker_launch.h"
#include "util/errors.h"
#include "util/hash.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return 1;
}

// Everything one evaluation accumulates while it runs.
class Evaluation {
 public:
  Evaluation(const EvalOptions& options, ProgressFn progress, void* user)
      : opt_(options), progress_(progress), user_(user) {}

  EvalResult run();

 private:
  void phase(const std::string& what) {
    if (progress_) progress_(what, user_);
  }
  void start_workers();
  bool load_problem(const json& overrides, const std::string& tag, json* reply);
  bool load_candidate(const json& problem_reply);
  bool run_trials(const std::string& tag, int trials, bool main_shape);
  bool time_candidate();
  void check_shape_variants(const json& variants);

  // Finishing touches: each sets the status and fills `error`.
  void fail_from_candidate(const WorkerReply& reply, const std::string& during);
  void fail_from_reference(const WorkerReply& reply, const std::string& during);
  void fail(const char* status, const std::string& kind, const std::string& message, const std::string& log = "");
  void add_check(const std::string& name, const std::string& verdict, const std::string& message);

  const EvalOptions& opt_;
  ProgressFn progress_;
  void* user_;
  WorkerDirs dirs_;
  std::unique_ptr<WorkerClient> ref_, cand_;
  json doc_ = json::object();
  json correctness_ = json::object();
  std::uint64_t seed_ = 0;
  int threads_ = 1;
  double max_abs_ = 0, max_rel_ = 0;
  int trials_passed_ = 0, trials_run_ = 0;
  std::string status_;
};

void Evaluation::fail(const char* status, const std::string& kind, const std::string& message, const std::string& log) {
  status_ = status;
  json error = {{"kind", kind}, {"message", message}};
  if (!log.empty()) {
    fs::path log_path = opt_.log_dir / (kind == "compile_error" ? "compile.log" : "error.log");
    std::ofstream(log_path) << log;
    error["log"] = kind == "compile_error" ? trim_compile_log(log) : trim_compile_log(log, {1, 0, 4000});
    error["log_path"] = log_path.string();
  }
  doc_["error"] = error;
}

void Evaluation::add_check(const std::string& name, const std::string& verdict, const std::string& message) {
  doc_["checks"].push_back({{"name", name}, {"verdict", verdict}, {"message", message}});
}

void Evaluation::fail_from_candidate(const WorkerReply& reply, const std::string& during) {
  std::string output = cand_->process().log_excerpt(4000);
  switch (reply.kind) {
    case WorkerReply::kTimeout:
      fail(status::kTimeout, "timeout", fmt::format("the candidate did not finish {} within {:.0f} s", during,
                                                    reply.wall_ms / 1000.0));
      break;
    case WorkerReply::kFlood:
      fail(status::kRuntimeError, "output_flood", fmt::format("{} during {}", reply.detail, during));
      break;
    case WorkerReply::kDied:
      fail(status::kRuntimeError, "crash", fmt::format("{}", reply.detail), output);
      break;
    case WorkerReply::kError: {
      const json& e = reply.body["error"];
      std::string kind = e.value("kind", "runtime_error");
      if (kind == "compile_error") {
        std::string log = e.value("log", "");
        fail(status::kCompileError, "compile_error", e.value("message", "").substr(0, 500), log.empty() ? output : log);
      } else {
        fail(status::kRuntimeError, kind, fmt::format("{} failed: {}", during, e.value("message", "")),
             e.value("traceback", ""));
      }
      break;
    }
    default:
      fail(status::kRuntimeError, "protocol", reply.detail);
  }
}

void Evaluation::fail_from_reference(const WorkerReply& reply, const std::string& during) {
  std::string message;
  std::string log;
  if (reply.kind == WorkerReply::kError) {
    message = reply.body["error"].value("message", "");
    log = reply.body["error"].value("traceback", "");
  } else {
    message = reply.detail;
    log = ref_->process().log_excerpt(4000);
  }
  fail(status::kProblemError, "problem_error", fmt::format("the reference failed while {}: {}", during, message), log);
}

void Evaluation::start_workers() {
  auto ref = launch_worker(WorkerRole::kReference, opt_, dirs_, threads_);
  ref_ = std::make_unique<WorkerClient>("reference", std::move(ref.process));
  auto cand = launch_worker(WorkerRole::kCandidate, opt_, dirs_, threads_);
  cand_ = std::make_unique<WorkerClient>("candidate", std::move(cand.process));
  doc_["env"]["isolation"] = cand.isolation;
}

bool Evaluation::load_problem(const json& overrides, const std::string& tag, json* reply_out) {
  json args = {{"problem", fs::absolute(opt_.problem).string()},
               {"overrides", overrides},
               {"seed", seed_},
               {"device", opt_.device},
               {"threads", threads_},
               {"precision", opt_.precision},
               {"shared_dir", dirs_.shared.string()},
               {"tag", tag},
               {"variants", tag == "main" ? opt_.shapes : 0}};
  WorkerReply r = ref_->request("load_problem", args, Seconds(opt_.reference_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    if (tag != "main") {
      doc_["notes"].push_back(fmt::format("size variant {} skipped: the reference rejects it ({})", overrides.dump(),
                                          r.kind == WorkerReply::kError ? r.body["error"].value("message", "") : r.detail));
      if (!ref_->alive()) fail_from_reference(r, "loading a size variant");
      return false;
    }
    fail_from_reference(r, "loading the problem");
    return false;
  }
  *reply_out = r.body;
  return true;
}

bool Evaluation::load_candidate(const json& problem_reply) {
  json args = {{"candidate", (dirs_.candidate / opt_.candidate.filename()).string()},
               {"init_inputs", problem_reply["init_inputs"]},
               {"state", problem_reply["state"]},
               {"seed", seed_},
               {"device", opt_.device},
               {"threads", threads_},
               {"precision", opt_.precision}};
  WorkerReply r = cand_->request("load_candidate", args, Seconds(opt_.target.compile_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    fail_from_candidate(r, "loading (compiling) the candidate");
    return false;
  }
  if (!doc_.contains("build")) {
    doc_["build"] = {{"load_seconds", r.wall_ms / 1000.0},
                     {"import_seconds", r.body.value("import_seconds", 0.0)},
                     {"events", r.body.value("builds", json::array())},
                     {"weights", r.body.value("weights", json::object())}};
  }
  return true;
}

bool Evaluation::run_trials(const std::string& tag, int trials, bool main_shape) {
  for (int t = 0; t < trials; ++t) {
    phase(fmt::format("{} trial {}/{}", tag, t + 1, trials));
    WorkerReply made = ref_->request("make_trial", {{"trial", t}, {"seed", seed_}, {"tag", tag},
                                                    {"check_determinism", main_shape && t == 0}},
                                     Seconds(opt_.reference_timeout_s));
    if (made.kind != WorkerReply::kOk) {
      fail_from_reference(made, fmt::format("running trial {}", t));
      return false;
    }
    if (main_shape && t == 0) {
      correctness_["output"] = made.body["outputs"];
      doc_["problem_bytes"] = {{"inputs", made.body["input_bytes"]}, {"outputs", made.body["output_bytes"]}};
    }
    fs::path out = dirs_.candidate / fmt::format("outputs_{}_{}.pt", tag, t);
    WorkerReply ran = cand_->request("run", {{"inputs", made.body["inputs"]}, {"outputs", out.string()}},
                                     Seconds(opt_.timeout_s));
    if (ran.kind != WorkerReply::kOk) {
      fail_from_candidate(ran, fmt::format("trial {}", t));
      return false;
    }
    ++trials_run_;
    WorkerReply checked = ref_->request("check", {{"trial", t}, {"candidate_outputs", out.string()}},
                                        Seconds(opt_.reference_timeout_s));
    if (checked.kind != WorkerReply::kOk) {
      // The reference could not even read what the candidate wrote: that is the candidate's fault.
      std::string msg = checked.kind == WorkerReply::kError ? checked.body["error"].value("message", "") : checked.detail;
      if (!ref_->alive()) {
        fail_from_reference(checked, "checking outputs");
      } else {
        fail(status::kIncorrect, "unreadable_outputs", fmt::format("trial {}: the candidate's outputs could not be read: {}", t, msg));
      }
      return false;
    }
    const json& c = checked.body;
    if (!c.value("match", false)) {
      json mismatch = c["mismatch"];
      mismatch["trial"] = t;
      mismatch["shape_tag"] = tag;
      correctness_["mismatch"] = mismatch;
      fail(status::kIncorrect, "mismatch",
           fmt::format("trial {}{}: {}", t, main_shape ? "" : " (size variant " + tag + ")", mismatch.value("message", "")));
      return false;
    }
    if (c.contains("input_mutation")) {
      const json& m = c["input_mutation"];
      std::string msg = fmt::format("the candidate changed its inputs where the reference does not: {}", m.value("message", ""));
      add_check("input_mutation", "fail", msg);
      fail(status::kRejected, "input_mutation", msg);
      return false;
    }
    ++trials_passed_;
    const json& stats = c["stats"];
    max_abs_ = std::max(max_abs_, stats.value("max_abs_error", 0.0));
    max_rel_ = std::max(max_rel_, stats.value("max_rel_error", 0.0));
    if (main_shape && t == 0) correctness_["tolerances"] = stats.value("tolerances", json::object());
  }
  return true;
}

bool Evaluation::time_candidate() {
  phase("preparing timing");
  WorkerReply rp = ref_->request("prepare_timing", {{"trial", 0}, {"compile_baseline", opt_.compile_baseline}},
                                 Seconds(opt_.reference_timeout_s));
  if (rp.kind != WorkerReply::kOk) {
    fail_from_reference(rp, "preparing the baselines");
    return false;
  }
  json& timing = doc_["timing"];
  timing["threads"] = threads_;
  timing["unit"] = "ms";
  timing["warmup"] = opt_.warmup;
  timing["block"] = opt_.block;
  timing["reference_timer"] = rp.body["timer"];
  bool with_compile = opt_.compile_baseline && !rp.body.contains("compile_error");
  if (rp.body.contains("compile_error")) timing["compile_error"] = rp.body["compile_error"];
  if (rp.body.contains("compile_seconds")) timing["compile_baseline_seconds"] = rp.body["compile_seconds"];

  fs::path inputs = dirs_.shared / "inputs_main_0.pt";
  WorkerReply cp = cand_->request("prepare_timing", {{"inputs", inputs.string()}}, Seconds(opt_.timeout_s));
  if (cp.kind != WorkerReply::kOk) {
    fail_from_candidate(cp, "preparing timing");
    return false;
  }
  timing["candidate_timer"] = cp.body["timer"];

  std::vector<std::string> order = {"candidate", "eager"};
  if (with_compile) order.push_back("compile");
  std::map<std::string, std::vector<double>> samples;
  std::vector<json> crosschecks;

  auto time_one = [&](const std::string& which, int reps, bool keep) -> bool {
    WorkerReply r = which == "candidate"
                        ? cand_->request("time", {{"reps", reps}}, Seconds(opt_.timeout_s))
                        : ref_->request("time", {{"which", which}, {"reps", reps}}, Seconds(opt_.reference_timeout_s));
    if (r.kind != WorkerReply::kOk) {
      if (which == "candidate") fail_from_candidate(r, "timing");
      else fail_from_reference(r, fmt::format("timing the {} baseline", which));
      return false;
    }
    std::vector<double> times = r.body.value("times_ms", std::vector<double>{});
    if (static_cast<int>(times.size()) != reps) {
      if (which == "candidate") {
        fail(status::kRejected, "timing_crosscheck", "the candidate process reported the wrong number of timings");
        add_check("timing_crosscheck", "fail", "wrong number of timings reported");
      } else {
        fail_from_reference(r, "timing");
      }
      return false;
    }
    double sum = 0;
    for (double t : times) sum += t;
    if (which == "candidate") {
      if (auto why = crosscheck_block(sum, r.wall_ms, reps)) {
        add_check("timing_crosscheck", "fail", *why);
        fail(status::kRejected, "timing_crosscheck", *why);
        return false;
      }
      crosschecks.push_back({{"reported_ms", sum}, {"wall_ms", r.wall_ms}});
    }
    if (keep) samples[which].insert(samples[which].end(), times.begin(), times.end());
    return true;
  };

  phase("warm-up");
  for (const auto& which : order)
    if (!time_one(which, opt_.warmup, false)) return false;
  int rounds = (opt_.reps + opt_.block - 1) / opt_.block;
  for (int round = 0; round < rounds; ++round) {
    phase(fmt::format("timing round {}/{}", round + 1, rounds));
    int reps = std::min(opt_.block, opt_.reps - round * opt_.block);
    // Rotate the order each round so no function always runs right after another.
    for (std::size_t k = 0; k < order.size(); ++k)
      if (!time_one(order[(k + static_cast<std::size_t>(round)) % order.size()], reps, true)) return false;
  }
  for (const auto& [which, values] : samples) timing[which] = to_json(summarize(values));
  timing["crosscheck"] = crosschecks;
  add_check("timing_crosscheck", "pass", "reported times agree with kforge's clock");
  double cand = timing["candidate"]["median_ms"];
  doc_["speedup_vs_eager"] = cand > 0 ? json(timing["eager"]["median_ms"].get<double>() / cand) : json(nullptr);
  doc_["speedup_vs_compile"] =
      with_compile && cand > 0 ? json(timing["compile"]["median_ms"].get<double>() / cand) : json(nullptr);
  return true;
}

void Evaluation::check_shape_variants(const json& variants) {
  int index = 0;
  for (const auto& overrides : variants) {
    ++index;
    std::string tag = fmt::format("v{}", index);
    phase(fmt::format("size variant {}/{}", index, variants.size()));
    json reply;
    if (!load_problem(overrides, tag, &reply)) {
      if (!status_.empty()) return;
      continue;
    }
    if (!load_candidate(reply)) return;
    if (!run_trials(tag, opt_.variant_trials, false)) return;
    correctness_["shapes_checked"].push_back({{"tag", tag}, {"globals", reply["globals"]}});
  }
}

EvalResult Evaluation::run() {
  auto started = Clock::now();
  threads_ = opt_.threads > 0 ? opt_.threads : available_cpus();
  if (opt_.seed) {
    seed_ = *opt_.seed;
  } else {
    std::random_device rd;
    seed_ = (static_cast<std::uint64_t>(rd()) << 16 ^ rd()) % 2147483647u;
  }
  const std::string candidate_source = read_file(opt_.candidate);
  doc_["schema_version"] = kEvalResultSchemaVersion;
  doc_["problem"] = fs::absolute(opt_.problem).string();
  doc_["problem_sha256"] = sha256_hex(read_file(opt_.problem));
  doc_["candidate"] = fs::absolute(opt_.candidate).string();
  doc_["candidate_sha256"] = sha256_hex(candidate_source);
  doc_["target"] = opt_.target.name;
  doc_["device"] = opt_.device;
  doc_["precision"] = opt_.precision;
  doc_["seed"] = seed_;
  doc_["overrides"] = opt_.overrides;
  doc_["checks"] = json::array();
  doc_["notes"] = json::array();
  doc_["env"] = {{"python", opt_.python}, {"threads", threads_}, {"log_dir", opt_.log_dir.string()}};

  fs::path root = make_temp_dir("kforge-eval-");
  dirs_ = {root / "shared", root / "reference", root / "candidate"};
  for (const auto& d : {dirs_.shared, dirs_.reference, dirs_.candidate}) fs::create_directories(d);
  fs::create_directories(opt_.log_dir);
  fs::copy_file(opt_.candidate, dirs_.candidate / opt_.candidate.filename());

  // Seconds spent in each stage, for the harness-overhead benchmark and for users.
  auto lap_start = Clock::now();
  auto lap = [&](const char* stage) {
    auto now = Clock::now();
    doc_["phases_s"][stage] = Seconds(now - lap_start).count();
    lap_start = now;
  };
  phase("starting workers");
  start_workers();
  json problem_reply;
  phase("loading problem");
  bool loaded = load_problem(json(opt_.overrides), "main", &problem_reply);
  lap("start_and_load_problem");
  if (loaded) {
    doc_["globals"] = problem_reply["globals"];
    doc_["env"]["torch"] = problem_reply.value("torch", "");
    phase("compiling and loading candidate");
    bool candidate_loaded = load_candidate(problem_reply);
    lap("load_candidate");
    if (candidate_loaded && run_trials("main", opt_.trials, true)) {
      lap("correctness_trials");
      correctness_["shapes_checked"] = json::array({{{"tag", "main"}, {"globals", problem_reply["globals"]}}});
      bool timed_ok = !opt_.timing || time_candidate();
      lap("timing");
      if (timed_ok) check_shape_variants(problem_reply.value("variants", json::array()));
      lap("shape_variants");
      if (status_.empty()) status_ = status::kCorrect;
    }
  }
  correctness_["trials"] = trials_run_;
  correctness_["trials_passed"] = trials_passed_;
  correctness_["max_abs_error"] = max_abs_;
  correctness_["max_rel_error"] = max_rel_;
  doc_["correctness"] = correctness_;
  doc_["status"] = status_;
  doc_["correct"] = status_ == status::kCorrect;
  if (!doc_.contains("speedup_vs_eager")) doc_["speedup_vs_eager"] = nullptr;
  if (!doc_.contains("speedup_vs_compile")) doc_["speedup_vs_compile"] = nullptr;

  if (cand_) cand_->shutdown();
  if (ref_) ref_->shutdown();
  lap("shutdown");
  std::error_code ec;
  fs::remove_all(root, ec);
  doc_["wall_seconds"] = Seconds(Clock::now() - started).count();
  EvalResult result;
  result.doc = std::move(doc_);
  return result;
}

}  // namespace

std::optional<std::string> crosscheck_block(double reported_sum_ms, double wall_ms, int reps) {
  // Slack for the pipe round trip, JSON and Python call overhead around the timed region.
  const double slack_ms = 5.0 + 0.5 * reps;
  if (reported_sum_ms > wall_ms * 1.02 + 1.0)
    return fmt::format("the candidate reported {:.3f} ms for {} repetitions, but only {:.3f} ms passed on kforge's clock",
                       reported_sum_ms, reps, wall_ms);
  if (reported_sum_ms < 0.5 * wall_ms - slack_ms)
    return fmt::format("the candidate reported {:.3f} ms for {} repetitions, but {:.3f} ms passed on kforge's clock "
                       "(its timer does not measure what it runs)",
                       reported_sum_ms, reps, wall_ms);
  return std::nullopt;
}

EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user) {
  if (!fs::exists(options.problem)) throw InputError(fmt::format("problem file not found: {}", options.problem.string()));
  if (!fs::exists(options.candidate))
    throw InputError(fmt::format("candidate file not found: {}", options.candidate.string()));
  Evaluation evaluation(options, progress, user);
  return evaluation.run();
}

}  // namespace kforge

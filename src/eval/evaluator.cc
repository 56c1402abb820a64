#include "eval/evaluator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "eval/compile_log.h"
#include "eval/device_lock.h"
#include "eval/device_state.h"
#include "eval/speedup.h"
#include "eval/timing_stats.h"
#include "eval/verdict.h"
#include "eval/worker_client.h"
#include "eval/worker_launch.h"
#include "eval/worker_pool.h"
#include "util/errors.h"
#include "util/hash.h"
#include "util/environment.h"
#include "util/paths.h"
#include "util/files.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

void crosscheck_backoff(int retry) {
  // A stall from outside (CPU load, another process's kernels holding the GPU) usually passes within
  // a second; waiting longer before each re-measurement lets it pass without giving a cheat anything.
  std::this_thread::sleep_for(std::chrono::milliseconds(250 * retry * retry));
}

// Everything one evaluation accumulates while it runs.
class Evaluation {
 public:
  Evaluation(const EvalOptions& options, ProgressFn progress, void* user, WorkerPool& pool)
      : opt_(options), progress_(progress), user_(user), pool_(pool) {}

  EvalResult run();

 private:
  void phase(const std::string& what) {
    if (progress_) progress_(what, user_);
  }
  void start_workers(bool with_reference);
  bool worker_ready(PooledWorker& w);
  void compile_candidate_only();
  bool load_problem(const json& overrides, const std::string& tag, json* reply);
  bool load_candidate(const json& problem_reply);
  PendingRequest send_load_candidate(const json& problem_reply);
  bool finish_load_candidate(const WorkerReply& reply);
  PendingRequest send_make_trial(const std::string& tag, int trial, bool main_shape);
  bool run_trials(const std::string& tag, int trials, bool main_shape,
                  std::optional<PendingRequest> first_draw = std::nullopt);
  bool time_candidate();
  void check_shape_variants(const json& variants);

  // Guards against cheating (docs/checks.md); each returns false once the candidate is rejected.
  bool static_check();
  bool calibrate();
  bool apply_findings(const json& check_reply);
  bool rotate_timing_inputs();
  bool verify_timed_outputs(int trial);
  bool judge_timing_reply(const json& body);
  bool time_on_fresh_inputs(double* median_ms);
  bool judge_speed(json& timing);
  void finish_checks();

  // Finishing touches: each sets the status and fills `error`.
  void fail_from_candidate(const WorkerReply& reply, const std::string& during);
  void fail_from_reference(const WorkerReply& reply, const std::string& during);
  void fail(const char* status, const std::string& kind, const std::string& message, const std::string& log = "");
  void add_check(const std::string& name, const std::string& verdict, const std::string& message);

  const EvalOptions& opt_;
  ProgressFn progress_;
  void* user_;
  WorkerPool& pool_;
  WorkerPair workers_;
  WorkerDirs dirs_;
  WorkerClient* ref_ = nullptr;
  WorkerClient* cand_ = nullptr;
  json doc_ = json::object();
  json correctness_ = json::object();
  std::uint64_t seed_ = 0;
  int threads_ = 1;
  double max_abs_ = 0, max_rel_ = 0;
  int trials_passed_ = 0, trials_run_ = 0;
  std::string status_;
  int main_trials_ = 0;                    // opt_.trials, raised when calibration tightens the check
  json extra_variants_ = json::array();    // size variants calibration asks for
  json import_facts_;                      // what the candidate did while it was imported
  int timing_sets_ = 0, timing_block_ = 0, current_set_ = 0;  // input sets the timed calls rotate through
  std::map<std::string, std::vector<double>> block_medians_;
  std::optional<double> fresh_ms_;
  json precision_worst_;
  json static_failure_;
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
      fail(status::kTimeout, "timeout",
           fmt::format(
               "the candidate did not finish {} within {:.0f} s{}", during, reply.wall_ms / 1000.0,
               opt_.device.rfind("cuda", 0) == 0 ? "; its process was killed, which also ends its GPU kernels" : ""));
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

void Evaluation::start_workers(bool with_reference) {
  workers_ = pool_.take(opt_, threads_, with_reference);
  dirs_ = workers_.dirs();
  ref_ = workers_.ref ? workers_.ref->client.get() : nullptr;
  cand_ = workers_.cand->client.get();
  doc_["env"]["isolation"] = workers_.cand->isolation;
  doc_["env"]["workers"] = workers_.describe();
}

// A worker that could not even start (no torch, no such device) is the environment's fault.
bool Evaluation::worker_ready(PooledWorker& w) {
  if (w.wait_ready()) return true;
  const WorkerReply& r = *w.start_failure;
  std::string why = r.kind == WorkerReply::kError ? r.body["error"].value("message", "") : r.detail;
  fail(status::kProblemError, "worker_start", fmt::format("the {} worker did not start: {}", w.client->role(), why),
       w.client->process().log_excerpt(4000));
  return false;
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
      doc_["notes"].push_back(
          fmt::format("size variant {} skipped: the reference rejects it ({})", overrides.dump(),
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
  return finish_load_candidate(cand_->wait(send_load_candidate(problem_reply)));
}

PendingRequest Evaluation::send_load_candidate(const json& problem_reply) {
  json args = {{"candidate", (dirs_.candidate / opt_.candidate.filename()).string()},
               {"init_inputs", problem_reply["init_inputs"]},
               {"state", problem_reply["state"]},
               {"seed", seed_},
               {"device", opt_.device},
               {"threads", threads_},
               {"precision", opt_.precision}};
  return cand_->send("load_candidate", args, Seconds(opt_.target.compile_timeout_s));
}

bool Evaluation::finish_load_candidate(const WorkerReply& r) {
  if (r.kind != WorkerReply::kOk) {
    fail_from_candidate(r, "loading (compiling) the candidate");
    return false;
  }
  if (import_facts_.is_null()) import_facts_ = r.body.value("import_facts", json::object());
  if (!doc_.contains("build")) {
    doc_["build"] = {{"load_seconds", r.wall_ms / 1000.0},
                     {"import_seconds", r.body.value("import_seconds", 0.0)},
                     {"events", r.body.value("builds", json::array())},
                     {"weights", r.body.value("weights", json::object())}};
  }
  return true;
}

// Pipelined: while the candidate runs trial t, the reference draws trial t+1; while the reference
// checks trial t, the candidate runs trial t+1. Results are judged in trial order, and the first
// failure ends the loop (a run still in flight is abandoned with the process).
PendingRequest Evaluation::send_make_trial(const std::string& tag, int trial, bool main_shape) {
  return ref_->send("make_trial",
                    {{"trial", trial}, {"seed", seed_}, {"tag", tag}, {"check_determinism", main_shape && trial == 0}},
                    Seconds(opt_.reference_timeout_s));
}

// `first_draw`: trial 0, already asked of the reference (while the candidate was still loading).
bool Evaluation::run_trials(const std::string& tag, int trials, bool main_shape,
                            std::optional<PendingRequest> first_draw) {
  auto make_trial = [&](int t) { return send_make_trial(tag, t, main_shape); };
  auto outputs_path = [&](int t) { return dirs_.candidate / fmt::format("outputs_{}_{}.pt", tag, t); };
  auto run_trial = [&](int t, const WorkerReply& made) {
    return cand_->send("run", {{"inputs", made.body["inputs"]}, {"outputs", outputs_path(t).string()}},
                       Seconds(opt_.timeout_s));
  };
  if (trials <= 0) return true;
  phase(fmt::format("{} trial 1/{}", tag, trials));
  WorkerReply made = ref_->wait(first_draw ? *first_draw : make_trial(0));
  if (made.kind != WorkerReply::kOk) {
    fail_from_reference(made, "running trial 0");
    return false;
  }
  if (main_shape) {
    correctness_["output"] = made.body["outputs"];
    doc_["problem_bytes"] = {{"inputs", made.body["input_bytes"]}, {"outputs", made.body["output_bytes"]}};
  }
  PendingRequest running = run_trial(0, made);
  for (int t = 0; t < trials; ++t) {
    if (t > 0) phase(fmt::format("{} trial {}/{}", tag, t + 1, trials));
    const bool last = t + 1 == trials;
    std::optional<PendingRequest> making;
    if (!last) making = make_trial(t + 1);
    WorkerReply ran = cand_->wait(running);
    if (ran.kind != WorkerReply::kOk) {
      fail_from_candidate(ran, fmt::format("trial {}", t));
      return false;
    }
    ++trials_run_;
    PendingRequest checking = ref_->send(
        "check",
        {{"trial", t}, {"candidate_outputs", outputs_path(t).string()},
         {"import_facts", main_shape && t == 0 ? import_facts_ : json(nullptr)}},
        Seconds(opt_.reference_timeout_s));
    if (making) {
      made = ref_->wait(*making);  // the reference answers in order: this reply comes before the check's
      if (made.kind == WorkerReply::kOk) running = run_trial(t + 1, made);
    }
    WorkerReply checked = ref_->wait(checking);
    if (checked.kind != WorkerReply::kOk) {
      // The reference could not even read what the candidate wrote: that is the candidate's fault.
      std::string msg =
          checked.kind == WorkerReply::kError ? checked.body["error"].value("message", "") : checked.detail;
      if (!ref_->alive()) {
        fail_from_reference(checked, "checking outputs");
      } else {
        fail(status::kIncorrect, "unreadable_outputs",
             fmt::format("trial {}: the candidate's outputs could not be read: {}", t, msg));
      }
      return false;
    }
    const json& c = checked.body;
    if (!apply_findings(c)) return false;
    if (!c.value("match", false)) {
      json mismatch = c["mismatch"];
      mismatch["trial"] = t;
      mismatch["shape_tag"] = tag;
      correctness_["mismatch"] = mismatch;
      fail(status::kIncorrect, "mismatch",
           fmt::format("trial {}{}: {}", t, main_shape ? "" : " (size variant " + tag + ")",
                       mismatch.value("message", "")));
      return false;
    }
    if (c.contains("input_mutation")) {
      const json& m = c["input_mutation"];
      std::string msg =
          fmt::format("the candidate changed its inputs where the reference does not: {}", m.value("message", ""));
      add_check("input_mutation", "fail", msg);
      fail(status::kRejected, "input_mutation", msg);
      return false;
    }
    ++trials_passed_;
    const json& stats = c["stats"];
    max_abs_ = std::max(max_abs_, stats.value("max_abs_error", 0.0));
    max_rel_ = std::max(max_rel_, stats.value("max_rel_error", 0.0));
    if (main_shape && t == 0) correctness_["tolerances"] = stats.value("tolerances", json::object());
    if (making && made.kind != WorkerReply::kOk) {
      fail_from_reference(made, fmt::format("running trial {}", t + 1));
      return false;
    }
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
  timing_sets_ = std::min(trials_passed_, 3);
  json input_sets = json::array();
  for (int k = 0; k < timing_sets_; ++k) input_sets.push_back((dirs_.shared / fmt::format("inputs_main_{}.pt", k)).string());
  WorkerReply cp = cand_->request("prepare_timing", {{"inputs", inputs.string()}, {"input_sets", input_sets}},
                                  Seconds(opt_.timeout_s));
  if (cp.kind != WorkerReply::kOk) {
    fail_from_candidate(cp, "preparing timing");
    return false;
  }
  timing["candidate_timer"] = cp.body["timer"];

  std::vector<std::string> order = {"candidate", "eager"};
  if (with_compile) order.push_back("compile");
  std::map<std::string, std::vector<double>> samples;
  std::vector<json> crosschecks;
  std::vector<json> device_states;

  // A block whose reported time disagrees with kforge's clock is measured again (up to twice)
  // before the candidate is rejected: a busy machine can stall one block, a cheat fails every time.
  int crosscheck_retries = 0;
  auto time_one = [&](const std::string& which, int reps, bool keep) -> bool {
    // Each candidate block runs on another input set, written into the same buffers; its last
    // output is checked, so results cached per buffer or per call count go stale and fail.
    if (which == "candidate" && !rotate_timing_inputs()) return false;
    for (;;) {
      WorkerReply r = which == "candidate" ? cand_->request("time", {{"reps", reps}}, Seconds(opt_.timeout_s))
                                           : ref_->request("time", {{"which", which}, {"reps", reps}},
                                                           Seconds(opt_.reference_timeout_s));
      if (r.kind != WorkerReply::kOk) {
        if (which == "candidate")
          fail_from_candidate(r, "timing");
        else
          fail_from_reference(r, fmt::format("timing the {} baseline", which));
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
          if (++crosscheck_retries <= 2) {
            crosschecks.push_back({{"reported_ms", sum}, {"wall_ms", r.wall_ms}, {"remeasured", true}});
            crosscheck_backoff(crosscheck_retries);
            continue;
          }
          add_check("timing_crosscheck", "fail", *why);
          fail(status::kRejected, "timing_crosscheck", *why);
          return false;
        }
        crosschecks.push_back({{"reported_ms", sum}, {"wall_ms", r.wall_ms}});
      } else if (r.body.contains("device_state")) {
        device_states.push_back(r.body["device_state"]);
      }
      if (which == "candidate" && !judge_timing_reply(r.body)) return false;
      if (keep) samples[which].insert(samples[which].end(), times.begin(), times.end());
      if (keep) block_medians_[which].push_back(summarize(times).median_ms);
      if (which == "candidate" && keep && !verify_timed_outputs(current_set_)) return false;
      return true;
    }
  };

  // No worker of the pool starts while this one measures; then one measurement per GPU at a time,
  // across processes, while builds and trials of others go on.
  auto quiet_from = Clock::now();
  auto quiet = pool_.quiet();
  if (double waited = Seconds(Clock::now() - quiet_from).count(); waited > 0.001)
    timing["waited_for_worker_start_seconds"] = waited;  // a worker started ahead was still starting
  auto gpu_lock = DeviceLock::acquire(opt_.device, state_dir() / "locks", [&](const fs::path& path) {
    phase(fmt::format("waiting for {} (another evaluation is timing on this GPU)", path.filename().string()));
  });
  if (gpu_lock)
    timing["device_lock"] = {{"path", gpu_lock->path().string()}, {"waited_seconds", gpu_lock->waited_seconds()}};
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
  if (!device_states.empty()) timing["device_state"] = summarize_device_states(device_states);
  add_check("timing_crosscheck", "pass", "reported times agree with kforge's clock");
  double cand = timing["candidate"]["median_ms"];
  doc_["speedup_vs_eager"] = cand > 0 ? json(timing["eager"]["median_ms"].get<double>() / cand) : json(nullptr);
  doc_["speedup_vs_compile"] =
      with_compile && cand > 0 ? json(timing["compile"]["median_ms"].get<double>() / cand) : json(nullptr);
  return judge_speed(timing);
}

// --compile-only for compiled targets: import the candidate with builds on and launches off.
void Evaluation::compile_candidate_only() {
  phase("compiling candidate (compile-only)");
  if (!worker_ready(*workers_.cand)) return;
  json args = {{"candidate", (dirs_.candidate / opt_.candidate.filename()).string()}};
  WorkerReply r = cand_->request("compile", args, Seconds(opt_.target.compile_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    fail_from_candidate(r, "compiling the candidate");
    return;
  }
  doc_["build"] = {{"load_seconds", r.wall_ms / 1000.0},
                   {"import_seconds", r.body.value("import_seconds", 0.0)},
                   {"events", r.body.value("builds", json::array())}};
  status_ = status::kCompiled;
  doc_["notes"].push_back("compile-only: the kernels were built; nothing was launched or checked");
}

// Static checks on the candidate's source, in the reference process (which never runs it), before
// any candidate code runs.
bool Evaluation::static_check() {
  phase("static checks");
  json args = {{"candidate", (dirs_.candidate / opt_.candidate.filename()).string()},
               {"problem", fs::absolute(opt_.problem).string()},
               {"allowed_torch_calls", opt_.target.allowed_torch_calls}};
  WorkerReply st = ref_->request("static_check", args, Seconds(opt_.reference_timeout_s));
  if (st.kind != WorkerReply::kOk) {
    fail_from_reference(st, "reading the candidate's source");
    return false;
  }
  for (const auto& c : st.body.value("checks", json::array())) merge_check(doc_["checks"], c);
  // A static failure rejects a candidate that would otherwise pass; it still runs (sandboxed), so the
  // runtime checks can name what it actually does.
  if (auto f = first_failure(st.body.value("checks", json::array()))) static_failure_ = *f;
  return true;
}

// Null-kernel calibration of the problem's check, in the reference process: nothing the candidate
// does can reach it, so it runs while the candidate process imports and builds the candidate.
bool Evaluation::calibrate() {
  phase("calibrating the check with null kernels");
  WorkerReply cal = ref_->request("calibrate",
                                  {{"seed", seed_}, {"problem", fs::absolute(opt_.problem).string()},
                                   {"problem_sha256", doc_["problem_sha256"]}, {"overrides", opt_.overrides},
                                   {"shapes", opt_.shapes}},
                                  Seconds(opt_.reference_timeout_s));
  if (cal.kind != WorkerReply::kOk) {
    fail_from_reference(cal, "calibrating the check");
    return false;
  }
  json report = cal.body;
  report.erase("id");
  report.erase("ok");
  if (report.value("tightened", false)) {
    main_trials_ = std::min(opt_.trials + report.value("extra_trials", 0), std::max(opt_.trials, report.value("max_trials", 20)));
    extra_variants_ = report.value("variants", json::array());
    report["trials"] = main_trials_;
  }
  const bool still = !report.value("still_passing", json::array()).empty();
  merge_check(doc_["checks"], {{"name", "calibration"},
                               {"verdict", report.value("tightened", false) || report.value("degenerate", false) ? "warn" : "pass"},
                               {"message", report.value("summary", "")}});
  if (report.value("degenerate", false)) doc_["notes"].push_back(report.value("note", ""));
  if (still) doc_["notes"].push_back(fmt::format("null kernels that still pass after tightening: {}", report["still_passing"].dump()));
  doc_["calibration"] = report;
  return true;
}

// Findings the reference derived from one check (runtime facts, precision audit, independence).
bool Evaluation::apply_findings(const json& c) {
  json findings = c.value("findings", json::array());
  if (c.contains("precision")) {
    const json& p = c["precision"];
    if (precision_worst_.is_null() || p.value("ratio", 0.0) > precision_worst_.value("ratio", 0.0)) precision_worst_ = p;
    if (p.value("verdict", "pass") != "pass")
      findings.push_back({{"name", "precision"}, {"verdict", p["verdict"]},
                          {"message", fmt::format("error vs a float64 reference is {:.3g}, {:.1f}x the limit {:.3g} "
                                                  "({}x the fp32 reference's own error {:.3g} plus a few ulp; policy {})",
                                                  p.value("candidate_error", 0.0), p.value("ratio", 0.0),
                                                  p.value("limit", 0.0), p.value("k", 0.0),
                                                  p.value("reference_error", 0.0), p.value("policy", ""))}});
  }
  for (const auto& f : findings) merge_check(doc_["checks"], f);
  if (auto f = first_failure(findings)) {
    fail(status::kRejected, (*f)["name"].get<std::string>(), (*f)["message"].get<std::string>());
    return false;
  }
  return true;
}

bool Evaluation::rotate_timing_inputs() {
  if (timing_sets_ <= 1) return true;
  current_set_ = timing_block_++ % timing_sets_;
  WorkerReply r = cand_->request("timing_inputs", {{"set", current_set_}}, Seconds(opt_.timeout_s));
  if (r.kind != WorkerReply::kOk) {
    fail_from_candidate(r, "loading timing inputs");
    return false;
  }
  return true;
}

bool Evaluation::verify_timed_outputs(int trial) {
  fs::path out = dirs_.candidate / fmt::format("timed_outputs_{}.pt", trial);
  WorkerReply w = cand_->request("timing_outputs", {{"outputs", out.string()}}, Seconds(opt_.timeout_s));
  if (w.kind != WorkerReply::kOk) {
    fail_from_candidate(w, "writing timed outputs");
    return false;
  }
  WorkerReply c = ref_->request("check", {{"trial", trial}, {"candidate_outputs", out.string()}, {"timing", true}},
                                Seconds(opt_.reference_timeout_s));
  if (c.kind != WorkerReply::kOk || !c.body.value("match", false)) {
    std::string why = c.kind != WorkerReply::kOk ? c.detail : c.body["mismatch"].value("message", "");
    std::string msg = fmt::format("the output of a timed call on input set {} is wrong ({}): results are cached or "
                                  "work is skipped when the same buffers come back", trial, why);
    merge_check(doc_["checks"], {{"name", "timing_outputs"}, {"verdict", "fail"}, {"message", msg}});
    fail(status::kRejected, "timing_outputs", msg);
    return false;
  }
  return true;
}

bool Evaluation::judge_timing_reply(const json& body) {
  json findings = json::array();
  for (const auto& e : body.value("events", json::array()))
    if (e.is_array() && e.size() == 2 && e[0] != "dynamic_code" && e[0] != "native_loading")
      findings.push_back({{"name", e[0]}, {"verdict", "fail"},
                          {"message", fmt::format("during timed calls: {}", e[1].get<std::string>())}});
  if (!body.value("tampered", json::array()).empty())
    findings.push_back({{"name", "monkey_patching"}, {"verdict", "fail"},
                        {"message", fmt::format("during timed calls the candidate replaced {}", body["tampered"].dump())}});
  return apply_findings({{"findings", findings}});
}

// One call per input set never seen before (new seeds), each output checked: a result cached by
// content or call count cannot help here.
bool Evaluation::time_on_fresh_inputs(double* median_ms) {
  if (fresh_ms_) {
    *median_ms = *fresh_ms_;
    return true;
  }
  std::vector<double> times;
  for (int j = 0; j < 3; ++j) {
    const int trial = 1000 + j;
    WorkerReply made = ref_->request("make_trial", {{"trial", trial}, {"seed", seed_}, {"tag", "main"}},
                                     Seconds(opt_.reference_timeout_s));
    if (made.kind != WorkerReply::kOk) {
      fail_from_reference(made, "drawing fresh inputs");
      return false;
    }
    WorkerReply in = cand_->request("timing_inputs", {{"path", made.body["inputs"]}}, Seconds(opt_.timeout_s));
    WorkerReply r = in;
    std::vector<double> t;
    // As for timing blocks: a disagreement is measured again (the same inputs, twice at most) before
    // it rejects, since a busy host or another process's kernels on the GPU can stall one call.
    for (int attempt = 0; in.kind == WorkerReply::kOk; ++attempt) {
      r = cand_->request("time", {{"reps", 1}}, Seconds(opt_.timeout_s));
      if (r.kind != WorkerReply::kOk) break;
      t = r.body.value("times_ms", std::vector<double>{});
      if (t.size() != 1 || !crosscheck_block(t[0], r.wall_ms, 1) || attempt == 2) break;
      crosscheck_backoff(attempt + 1);
    }
    if (r.kind != WorkerReply::kOk) {
      fail_from_candidate(r, "timing on fresh inputs");
      return false;
    }
    if (t.size() != 1 || crosscheck_block(t[0], r.wall_ms, 1)) {
      fail(status::kRejected, "timing_crosscheck", "timing on fresh inputs disagrees with kforge's clock");
      return false;
    }
    if (!judge_timing_reply(r.body) || !verify_timed_outputs(trial)) return false;
    times.push_back(t[0]);
  }
  fresh_ms_ = summarize(times).median_ms;
  *median_ms = *fresh_ms_;
  return true;
}

// Confidence intervals for the speedups, speed of light, and speedups too large to believe.
bool Evaluation::judge_speed(json& timing) {
  json speedup = json::object();
  for (const char* base : {"eager", "compile"})
    if (block_medians_.count(base) && block_medians_.count("candidate") &&
        block_medians_[base].size() == block_medians_["candidate"].size())
      speedup[std::string("vs_") + base] = to_json(estimate_speedup(block_medians_[base], block_medians_["candidate"]));
  doc_["speedup"] = speedup;

  const double cand_ms = timing["candidate"]["median_ms"].get<double>();
  const double eager_ms = timing["eager"]["median_ms"].get<double>();
  WorkerReply s = ref_->request("sol", {{"trial", 0}, {"peaks_cache", (cache_dir() / "peaks").string()}},
                                Seconds(opt_.reference_timeout_s));
  if (s.kind != WorkerReply::kOk) {
    doc_["notes"].push_back(fmt::format("speed of light not computed: {}",
                                        s.kind == WorkerReply::kError ? s.body["error"].value("message", "") : s.detail));
  } else {
    json sol = s.body;
    sol.erase("id");
    sol.erase("ok");
    const double sol_ms = sol.value("sol_ms", 0.0);
    sol["candidate_pct_of_sol"] = percent_of_sol(sol_ms, cand_ms);
    sol["eager_pct_of_sol"] = percent_of_sol(sol_ms, eager_ms);
    sol["slack"] = opt_.sol_slack;
    SolCall call = judge_sol(sol_ms, cand_ms, eager_ms, opt_.sol_slack);
    if (call == SolCall::kModelUnreliable && sol.value("peaks_cached", false)) {
      // Peaks cached while the machine was busy understate it: measure them again, once.
      WorkerReply again = ref_->request("sol", {{"trial", 0}, {"peaks_cache", (cache_dir() / "peaks").string()},
                                                {"remeasure_peaks", true}}, Seconds(opt_.reference_timeout_s));
      if (again.kind == WorkerReply::kOk) {
        sol = again.body;
        sol.erase("id");
        sol.erase("ok");
        sol["peaks_remeasured"] = true;
        sol["candidate_pct_of_sol"] = percent_of_sol(sol["sol_ms"].get<double>(), cand_ms);
        sol["eager_pct_of_sol"] = percent_of_sol(sol["sol_ms"].get<double>(), eager_ms);
        sol["slack"] = opt_.sol_slack;
        call = judge_sol(sol["sol_ms"].get<double>(), cand_ms, eager_ms, opt_.sol_slack);
      }
    }
    const double sol_ms_final = sol.value("sol_ms", 0.0);
    json check = {{"name", "speed_of_light"}, {"verdict", "pass"},
                  {"message", fmt::format("candidate at {:.3g}% of speed of light ({:.3g} ms)", sol["candidate_pct_of_sol"].get<double>(), sol_ms_final)}};
    if (call == SolCall::kModelUnreliable) {
      check["verdict"] = "warn";
      check["message"] = fmt::format("the eager reference runs at {:.3g}% of the estimated speed of light: the estimate "
                                     "does not describe this problem and judges nobody", sol["eager_pct_of_sol"].get<double>());
    } else if (call == SolCall::kBeyond) {
      phase("faster than speed of light: re-measuring on fresh inputs");
      double fresh = 0;
      if (!time_on_fresh_inputs(&fresh)) return false;
      sol["remeasured_ms"] = fresh;
      sol["remeasured_pct_of_sol"] = percent_of_sol(sol_ms_final, fresh);
      doc_["sol"] = sol;
      std::string why;
      if (judge_sol(sol_ms_final, fresh, eager_ms, opt_.sol_slack) == SolCall::kBeyond)
        why = fmt::format("{:.3g} ms per call on fresh inputs is {:.3g}% of the speed of light ({:.3g} ms for {} FLOPs "
                          "and {} bytes): physically impossible", fresh, sol["remeasured_pct_of_sol"].get<double>(),
                          sol_ms_final, sol.value("flops", 0), sol.value("bytes", 0));
      else if (fresh > 3 * cand_ms)
        why = fmt::format("{:.3g} ms per call on inputs it has seen, {:.3g} ms on fresh inputs: it is only fast when "
                          "the inputs come back (cached results)", cand_ms, fresh);
      if (!why.empty()) {
        merge_check(doc_["checks"], {{"name", "suspicious"}, {"verdict", "fail"}, {"message", why}});
        fail(status::kRejected, "suspicious", why);
        return false;
      }
      check["verdict"] = "warn";
      check["message"] = fmt::format("beyond the speed of light once, within it when re-measured on fresh inputs "
                                     "({:.3g} ms)", fresh);
    }
    doc_["sol"] = sol;
    merge_check(doc_["checks"], check);
  }
  const double speedup_point = eager_ms / cand_ms;
  if (speedup_point > opt_.speedup_warn_factor) {
    phase("implausible speedup: re-measuring on fresh inputs");
    double fresh = 0;
    if (!time_on_fresh_inputs(&fresh)) return false;
    timing["fresh_inputs_ms"] = fresh;
    merge_check(doc_["checks"], {{"name", "implausible_speedup"}, {"verdict", "warn"},
                                 {"message", fmt::format("{:.1f}x faster than eager (threshold {:.0f}x); re-measured "
                                                         "on fresh inputs: {:.1f}x", speedup_point,
                                                         opt_.speedup_warn_factor, eager_ms / fresh)}});
  }
  return true;
}

// Every check that ran and never fired is listed as passed, so the result shows what was looked at.
void Evaluation::finish_checks() {
  if (!precision_worst_.is_null()) doc_["precision_audit"] = precision_worst_;
  if (trials_run_ == 0) return;
  for (const char* name : {"file_io", "network", "concurrency", "introspection", "monkey_patching", "output_type",
                           "deferred_output", "output_aliasing", "torch_delegation", "input_independent", "precision",
                           "input_mutation"})
    merge_check(doc_["checks"], {{"name", name}, {"verdict", "pass"}, {"message", "not observed at run time"}});
  if (opt_.timing && doc_.contains("timing") && doc_["timing"].contains("candidate"))
    merge_check(doc_["checks"], {{"name", "timing_outputs"}, {"verdict", "pass"},
                                 {"message", fmt::format("outputs of timed calls correct across {} rotating input sets", timing_sets_)}});
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

  fs::create_directories(opt_.log_dir);

  // Seconds spent in each stage, for the harness-overhead benchmark and for users.
  auto lap_start = Clock::now();
  auto lap = [&](const char* stage) {
    auto now = Clock::now();
    doc_["phases_s"][stage] = Seconds(now - lap_start).count();
    lap_start = now;
  };
  // Compile-only: Triton runs its kernels in the interpreter on the CPU (options adjusted in
  // evaluate()); every other target only builds.
  const bool build_only = opt_.compile_only && opt_.target.language != "triton";
  if (opt_.compile_only) doc_["compile_only"] = build_only ? "build" : "triton_interpreter";
  phase("starting workers");
  start_workers(!build_only);
  fs::copy_file(opt_.candidate, dirs_.candidate / opt_.candidate.filename());
  // Readable by the sandbox's unprivileged uid, whatever the user's file mode was.
  fs::permissions(dirs_.candidate / opt_.candidate.filename(), fs::perms::owner_read | fs::perms::group_read |
                  fs::perms::others_read, fs::perm_options::add);
  json problem_reply;
  if (build_only) compile_candidate_only();
  if (!build_only) phase("loading problem");
  bool loaded = !build_only && worker_ready(*workers_.ref) && load_problem(json(opt_.overrides), "main", &problem_reply);
  lap("start_and_load_problem");
  if (loaded) {
    doc_["globals"] = problem_reply["globals"];
    doc_["env"]["torch"] = problem_reply.value("torch", "");
    main_trials_ = opt_.trials;
    bool candidate_loaded = false;
    std::optional<PendingRequest> first_draw;
    if (static_check()) {
      // The two workers overlap: the candidate starts and builds while the reference calibrates.
      PendingRequest loading = send_load_candidate(problem_reply);
      bool calibrated = calibrate();
      lap("screen_candidate");
      // Trial 0 is drawn while the candidate may still be building.
      if (calibrated) first_draw = send_make_trial("main", 0, true);
      phase("compiling and loading candidate");
      candidate_loaded = calibrated && worker_ready(*workers_.cand) && finish_load_candidate(cand_->wait(loading));
    } else {
      lap("screen_candidate");
    }
    lap("load_candidate");
    if (candidate_loaded && run_trials("main", main_trials_, true, first_draw)) {
      lap("correctness_trials");
      correctness_["shapes_checked"] = json::array({{{"tag", "main"}, {"globals", problem_reply["globals"]}}});
      bool timed_ok = !opt_.timing || time_candidate();
      lap("timing");
      json variants = problem_reply.value("variants", json::array());
      if (variants.empty()) variants = extra_variants_;
      if (timed_ok) check_shape_variants(variants);
      lap("shape_variants");
      if (status_.empty() && !static_failure_.is_null())
        fail(status::kRejected, static_failure_["name"].get<std::string>(), static_failure_["message"].get<std::string>());
      if (status_.empty()) status_ = status::kCorrect;
    }
  }
  finish_checks();
  if (auto breach = workers_.cand ? workers_.cand->disk_breach() : std::nullopt) {
    add_check("disk_quota", "fail", *breach);
    fail(status::kRejected, "disk_quota", *breach);
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

  // The reference served this evaluation well unless it failed: then it goes, like every candidate.
  ref_ = cand_ = nullptr;
  pool_.give_back(std::move(workers_), status_ != status::kProblemError, opt_.reference_timeout_s);
  lap("shutdown");
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
    return fmt::format(
        "the candidate reported {:.3f} ms for {} repetitions, but only {:.3f} ms passed on kforge's clock",
        reported_sum_ms, reps, wall_ms);
  if (reported_sum_ms < 0.5 * wall_ms - slack_ms)
    return fmt::format(
        "the candidate reported {:.3f} ms for {} repetitions, but {:.3f} ms passed on kforge's clock "
        "(its timer does not measure what it runs)",
        reported_sum_ms, reps, wall_ms);
  return std::nullopt;
}

EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user, WorkerPool* pool) {
  std::optional<WorkerPool> own;
  if (!pool) pool = &own.emplace();
  if (!fs::exists(options.problem))
    throw InputError(fmt::format("problem file not found: {}", options.problem.string()));
  if (!fs::exists(options.candidate))
    throw InputError(fmt::format("candidate file not found: {}", options.candidate.string()));
  if (options.compile_only && options.target.language == "triton") {
    // No GPU needed: check correctness with Triton's interpreter on the CPU, without timing.
    EvalOptions on_cpu = options;
    on_cpu.device = "cpu";
    on_cpu.timing = false;
    on_cpu.worker_env["TRITON_INTERPRET"] = "1";
    Evaluation evaluation(on_cpu, progress, user, *pool);
    return evaluation.run();
  }
  Evaluation evaluation(options, progress, user, *pool);
  return evaluation.run();
}

}  // namespace kforge

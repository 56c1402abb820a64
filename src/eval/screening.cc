#include "eval/screening.h"

#include <fmt/format.h>

#include "eval/verdict.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

void take_workers(EvalRun& run, WorkerPool& pool, WorkerPair& workers, bool with_reference) {
  workers = pool.take(run.opt, run.threads, with_reference);
  run.dirs = workers.dirs();
  run.reference_shared = run.dirs.shared;
  run.ref = workers.ref ? workers.ref->client.get() : nullptr;
  run.cand = workers.cand->client.get();
  run.doc["env"]["isolation"] = workers.cand->isolation;
  // The candidate's memory bound with its memory files and tmpfs pages (util/memory_cgroup.h).
  const Subprocess& process = run.cand->process();
  if (const MemoryCgroup* cg = process.memory_cgroup())
    run.doc["env"]["memory_limit"] = {{"bytes", cg->limit_bytes()}, {"by", "memory cgroup"}};
  else if (!process.memory_cgroup_missing().empty())
    run.doc["env"]["memory_limit"] = {{"bytes", nullptr}, {"by", "none: " + process.memory_cgroup_missing()}};
  run.doc["env"]["workers"] = workers.describe();
}

// A worker that did not get ready never saw the problem or the candidate (no torch, no GPU, an
// interpreter that does not run): the machine is at fault, and every evaluation here would fail alike.
bool worker_ready(EvalRun& run, PooledWorker& w) {
  if (w.wait_ready()) return true;
  run.fail(status::kEnvironmentError, "worker_start",
           fmt::format("the {} worker did not start: {}", w.client->role(), reply_message(*w.start_failure)),
           w.client->process().log_excerpt(4000));
  return false;
}

bool load_problem(EvalRun& run, const json& overrides, const std::string& tag, json* reply_out) {
  json args = {{"problem", fs::absolute(run.opt.problem).string()},
               {"overrides", overrides},
               {"seed", run.seed},
               {"device", run.opt.device},
               {"threads", run.threads},
               {"precision", run.opt.precision},
               {"shared_dir", run.reference_shared.string()},
               {"tag", tag},
               {"variants", tag == "main" ? run.opt.shapes : 0}};
  if (run.device_share_bytes) args["device_share_bytes"] = *run.device_share_bytes;
  WorkerReply r = run.ref->request("load_problem", args, Seconds(run.opt.reference_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    if (tag != "main") {
      run.doc["notes"].push_back(fmt::format("size variant {} skipped: the reference rejects it ({})",
                                             overrides.dump(), reply_message(r)));
      if (!run.ref->alive()) run.fail_from_reference(r, "loading a size variant");
      return false;
    }
    run.fail_from_reference(r, "loading the problem");
    return false;
  }
  *reply_out = r.body;
  return true;
}

bool static_check(EvalRun& run) {
  run.phase("static checks");
  json args = {{"candidate", run.candidate_file().string()},
               {"problem", fs::absolute(run.opt.problem).string()},
               {"allowed_torch_calls", run.opt.target.allowed_torch_calls},
               {"kernel_loops", run.opt.target.kernel_loops},
               {"kernel_modules", run.opt.target.kernel_modules}};
  WorkerReply st = run.ref->request("static_check", args, Seconds(run.opt.reference_timeout_s));
  if (st.kind != WorkerReply::kOk) {
    run.fail_from_reference(st, "reading the candidate's source");
    return false;
  }
  const json checks = st.body.value("checks", json::array());
  for (const auto& c : checks) merge_check(run.doc["checks"], c);
  // A source the checks could not finish on (beyond their limits, or the checker crashed) is
  // rejected at once: nothing of it runs, and the reference, unharmed, serves the next candidate.
  for (const auto& c : checks) {
    const std::string name = c.value("name", "");
    if ((name == "static_limits" || name == "check_error") && c.value("verdict", "") == "fail") {
      std::string log = c.value("message", "") + "\nlimits: " + c.value("limits", json::object()).dump();
      if (!c.value("log", "").empty()) log += "\n" + c.value("log", "");
      run.fail(status::kRejected, name, c.value("message", ""), log);
      return false;
    }
  }
  if (auto f = first_failure(checks)) run.static_failure = *f;
  return true;
}

// Nothing the candidate does can reach the reference, so this runs while the candidate builds.
bool calibrate(EvalRun& run) {
  run.phase("calibrating the check with null kernels");
  WorkerReply cal = run.ref->request("calibrate",
                                     {{"seed", run.seed}, {"problem", fs::absolute(run.opt.problem).string()},
                                      {"problem_sha256", run.doc["problem_sha256"]}, {"overrides", run.opt.overrides},
                                      {"shapes", run.opt.shapes}},
                                     Seconds(run.opt.reference_timeout_s));
  if (cal.kind != WorkerReply::kOk) {
    run.fail_from_reference(cal, "calibrating the check");
    return false;
  }
  json report = cal.body;
  report.erase("id");
  report.erase("ok");
  const bool tightened = report.value("tightened", false);
  const bool degenerate = report.value("degenerate", false);
  if (tightened) {
    run.main_trials = std::min(run.opt.trials + report.value("extra_trials", 0),
                               std::max(run.opt.trials, report.value("max_trials", 20)));
    run.extra_variants = report.value("variants", json::array());
    report["trials"] = run.main_trials;
  }
  const json still_passing = report.value("still_passing", json::array());
  merge_check(run.doc["checks"], {{"name", "calibration"},
                                  {"verdict", tightened || degenerate ? "warn" : "pass"},
                                  {"message", report.value("summary", "")}});
  if (degenerate) run.doc["notes"].push_back(report.value("note", ""));
  if (!still_passing.empty())
    run.doc["notes"].push_back(fmt::format("null kernels that still pass after tightening: {}", still_passing.dump()));
  run.doc["calibration"] = report;
  return true;
}

PendingRequest send_load_candidate(EvalRun& run, const json& problem_reply) {
  json args = {{"candidate", run.candidate_file().string()},
               {"transport", run.visible_to_candidate(problem_reply["transport"].get<std::string>())},
               {"init_inputs", problem_reply["init_inputs"]},
               {"state", problem_reply["state"]},
               {"seed", run.seed},
               {"device", run.opt.device},
               {"threads", run.threads},
               {"precision", run.opt.precision},
               {"kernel_modules", run.opt.target.kernel_modules}};
  return run.cand->send("load_candidate", args, Seconds(run.opt.target.compile_timeout_s));
}

bool finish_load_candidate(EvalRun& run, const WorkerReply& r) {
  if (r.kind != WorkerReply::kOk) {
    run.fail_from_candidate(r, "loading (compiling) the candidate");
    return false;
  }
  if (run.import_facts.is_null()) run.import_facts = r.body.value("import_facts", json::object());
  if (!run.doc.contains("build")) {
    run.doc["build"] = {{"load_seconds", r.wall_ms / 1000.0},
                        {"import_seconds", r.body.value("import_seconds", 0.0)},
                        {"events", r.body.value("builds", json::array())},
                        {"weights", r.body.value("weights", json::object())}};
  }
  return true;
}

bool load_candidate(EvalRun& run, const json& problem_reply) {
  return finish_load_candidate(run, run.cand->wait(send_load_candidate(run, problem_reply)));
}

void compile_candidate_only(EvalRun& run, PooledWorker& candidate) {
  run.phase("compiling candidate (compile-only)");
  if (!worker_ready(run, candidate)) return;
  json args = {{"candidate", run.candidate_file().string()}};
  WorkerReply r = run.cand->request("compile", args, Seconds(run.opt.target.compile_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    run.fail_from_candidate(r, "compiling the candidate");
    return;
  }
  run.doc["build"] = {{"load_seconds", r.wall_ms / 1000.0},
                      {"import_seconds", r.body.value("import_seconds", 0.0)},
                      {"events", r.body.value("builds", json::array())}};
  run.status = status::kCompiled;
  run.doc["notes"].push_back("compile-only: the kernels were built; nothing was launched or checked");
}

}  // namespace kforge

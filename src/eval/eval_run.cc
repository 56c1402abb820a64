#include "eval/eval_run.h"

#include <fmt/format.h>

#include <csignal>
#include <fstream>
#include <random>

#include "eval/compile_log.h"
#include "eval/verdict.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

json CorrectnessTally::to_json() const {
  json out = detail;
  out["trials"] = trials_run;
  out["trials_passed"] = trials_passed;
  out["max_abs_error"] = max_abs_error;
  out["max_rel_error"] = max_rel_error;
  return out;
}

std::vector<double> FreshRound::fresh_calls_ms() const {
  std::vector<double> fresh;
  for (const auto& block : blocks_ms)
    if (!block.empty()) fresh.push_back(block.back());
  return fresh;
}

std::vector<double> FreshRound::seen_calls_ms() const {
  std::vector<double> seen;
  for (const auto& block : blocks_ms)
    if (!block.empty()) seen.insert(seen.end(), block.begin(), block.end() - 1);
  return seen;
}

std::vector<double> FreshTiming::fresh_calls_ms() const {
  std::vector<double> all;
  for (const FreshRound& r : rounds)
    for (double ms : r.fresh_calls_ms()) all.push_back(ms);
  return all;
}

std::vector<double> FreshTiming::seen_calls_ms() const {
  std::vector<double> all;
  for (const FreshRound& r : rounds)
    for (double ms : r.seen_calls_ms()) all.push_back(ms);
  return all;
}

namespace {

std::string random_token() {
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", rd());
  return token;
}

}  // namespace

EvalRun::EvalRun(const EvalOptions& options, ProgressFn progress_fn, void* user_data)
    : opt(options), progress(progress_fn), user(user_data), output_token(random_token()) {}

void EvalRun::phase(const std::string& what) const {
  if (progress) progress(what, user);
}

fs::path EvalRun::candidate_file() const { return dirs.candidate / opt.candidate.filename(); }

std::string EvalRun::visible_to_candidate(const std::string& reference_path) const {
  if (reference_shared.empty() || reference_shared == dirs.shared) return reference_path;
  fs::path from(reference_path);
  fs::path to = dirs.shared / from.lexically_relative(reference_shared);
  if (!fs::exists(to)) {
    fs::create_directories(to.parent_path());
    std::error_code ec;
    fs::create_hard_link(from, to, ec);  // the same file, no copy; across file systems a copy
    if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }
  return to.string();
}

void EvalRun::fail(const char* new_status, const std::string& kind, const std::string& message, const std::string& log) {
  status = new_status;
  json error = {{"kind", kind}, {"message", message}};
  if (!log.empty()) {
    fs::path log_path = opt.log_dir / (kind == "compile_error" ? "compile.log" : "error.log");
    std::ofstream(log_path) << log;
    error["log"] = kind == "compile_error" ? trim_compile_log(log) : trim_compile_log(log, {1, 0, 4000});
    error["log_path"] = log_path.string();
  }
  doc["error"] = error;
}

void EvalRun::add_check(const std::string& name, const std::string& verdict, const std::string& message) {
  doc["checks"].push_back({{"name", name}, {"verdict", verdict}, {"message", message}});
}

std::string reply_message(const WorkerReply& reply) {
  if (reply.kind == WorkerReply::kError && reply.body.contains("error") && reply.body["error"].is_object())
    return reply.body["error"].value("message", "");
  return reply.detail;
}

void EvalRun::fail_from_candidate(const WorkerReply& reply, const std::string& during) {
  std::string output = cand->process().log_excerpt(4000);
  switch (reply.kind) {
    case WorkerReply::kTimeout:
      fail(status::kTimeout, "timeout",
           fmt::format(
               "the candidate did not finish {} within {:.0f} s{}", during, reply.wall_ms / 1000.0,
               opt.device.rfind("cuda", 0) == 0 ? "; its process was killed, which also ends its GPU kernels" : ""));
      break;
    case WorkerReply::kFlood:
      fail(status::kRuntimeError, "output_flood", fmt::format("{} during {}", reply.detail, during));
      break;
    case WorkerReply::kDied:
      if (const MemoryCgroup* cg = cand->process().memory_cgroup(); cg && cg->oom_kills() > 0)
        fail(status::kRuntimeError, "memory_limit",
             fmt::format("{}: it passed its memory limit of {:.3g} GiB ([sandbox] memory_gb; its memory files and "
                         "tmpfs pages count too), and the kernel ended it", reply.detail,
                         static_cast<double>(cg->limit_bytes()) / (1ull << 30)),
             output);
      else if (killed_for_memory(*cand))
        fail(status::kRuntimeError, "host_oom",
             fmt::format("{}: the kernel's out-of-memory killer ended it (host memory)", reply.detail), output);
      else
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
    case WorkerReply::kProtocol:
      add_check("protocol", "fail", reply.detail);
      fail(status::kRejected, "protocol", fmt::format("{} (during {})", reply.detail, during), output);
      break;
    default:
      fail(status::kRuntimeError, "protocol", reply.detail);
  }
}

void EvalRun::fail_from_reference(const WorkerReply& reply, const std::string& during) {
  std::string log = reply.kind == WorkerReply::kError ? reply.body["error"].value("traceback", "")
                                                      : ref->process().log_excerpt(4000);
  const bool host_oom = reply.kind == WorkerReply::kDied && killed_for_memory(*ref);
  fail(status::kProblemError, "problem_error",
       fmt::format("the reference failed while {}: {}{}", during, reply_message(reply),
                   host_oom ? "; the kernel's out-of-memory killer ended it (host memory)" : ""),
       log);
  // Out of memory: the problem is at fault only if it does not fit alone (evaluator.cc retries it).
  if (is_device_oom(reply)) doc["error"]["cause"] = "device_oom";
  if (host_oom) doc["error"]["cause"] = "host_oom";
}

bool EvalRun::killed_for_memory(WorkerClient& worker) const {
  if (worker.alive()) return false;
  if (worker.process().exit_status().terminating_signal() != SIGKILL) return false;
  const auto now = count_oom_kills();
  return now && oom_kills_at_start && *now > *oom_kills_at_start;
}

bool EvalRun::reference_at_fault(const WorkerReply& checked) const {
  return !ref->alive() || is_device_oom(checked);
}

bool EvalRun::apply_findings(const json& found, const std::optional<PrecisionAudit>& p) {
  json findings = found.is_array() ? found : json::array();
  if (p) {
    if (!precision_worst || p->ratio > precision_worst->ratio) precision_worst = p;
    if (p->verdict != "pass")
      findings.push_back({{"name", "precision"}, {"verdict", p->verdict},
                          {"message", fmt::format("error vs a float64 reference is {:.3g}, {:.1f}x the limit {:.3g} "
                                                  "({}x the fp32 reference's own error {:.3g} plus a few ulp; policy {})",
                                                  p->candidate_error, p->ratio, p->limit, p->k, p->reference_error,
                                                  p->policy)}});
  }
  for (const auto& f : findings) merge_check(doc["checks"], f);
  if (auto f = first_failure(findings)) {
    fail(status::kRejected, (*f)["name"].get<std::string>(), (*f)["message"].get<std::string>());
    return false;
  }
  return true;
}

}  // namespace kforge

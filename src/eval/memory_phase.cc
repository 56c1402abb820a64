#include "eval/memory_phase.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "eval/timing_phase.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

std::optional<std::uint64_t> process_bytes(const json& e) {
  if (e.value("method", "") != "meta") return std::nullopt;
  auto get = [&](const char* key) { return e.value(key, std::uint64_t{0}); };
  return get("parameter_bytes") + 3 * get("input_bytes") + get("forward_peak_bytes") + get("output_bytes");
}

std::optional<std::uint64_t> evaluation_bytes(const json& estimate, int processes, bool timing, int block,
                                              std::uint64_t context_bytes) {
  const auto per_process = process_bytes(estimate);
  if (!per_process) return std::nullopt;
  // A block on a fresh input set keeps one call more than a timing block.
  const std::uint64_t kept_outputs =
      timing ? static_cast<std::uint64_t>(fresh_block_calls(block)) * estimate.value("output_bytes", std::uint64_t{0}) : 0;
  const auto n = static_cast<std::uint64_t>(processes);
  return n * (*per_process + context_bytes) + (n - 1) * kept_outputs;
}

std::optional<MemoryTicket> reserve_device_memory(EvalRun& run, int processes, bool alone) {
  const EvalOptions& opt = run.opt;
  run.phase("estimating memory");
  json args = {
      {"problem", fs::absolute(opt.problem).string()}, {"overrides", json(opt.overrides)}, {"device", opt.device}};
  WorkerReply r = run.ref->request("estimate_memory", args, Seconds(opt.reference_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    run.fail_from_reference(r, "loading the problem");
    return std::nullopt;
  }
  const json device = r.body.value("device", json::object());
  const auto per_process = process_bytes(r.body);
  json estimate = r.body;
  estimate.erase("device");
  estimate.erase("ok");
  estimate.erase("id");
  if (per_process) estimate["process_bytes"] = *per_process;

  MemoryRequest request;
  const bool cuda = opt.device.rfind("cuda", 0) == 0;
  const auto bytes = evaluation_bytes(r.body, processes, opt.timing, opt.block, cuda ? kCudaContextBytes : 0);
  request.bytes = bytes.value_or(0);
  request.alone = alone || !per_process;
  request.free_bytes = device.value("free_bytes", std::uint64_t{0});
  if (opt.device_memory_gb) request.cap_bytes = static_cast<std::uint64_t>(*opt.device_memory_gb * (1ull << 30));
  const fs::path ledger = memory_ledger_path(opt.device, opt.target.device_lock, state_dir() / "locks");
  MemoryTicket ticket = reserve_memory(ledger, request, [&](const std::string& why) {
    spdlog::debug("{}: waiting for memory on {}: {}", opt.candidate.filename().string(), opt.device, why);
    run.phase("waiting for memory: " + why);
  });
  if (bytes) run.device_share_bytes = device_share_bytes(ticket.alone(), ticket.budget_bytes(), *bytes);
  run.doc["memory"] = {{"estimate_bytes", bytes ? json(*bytes) : json()},
                       {"processes", processes},
                       {"estimate", estimate},
                       {"device_free_bytes", request.free_bytes},
                       {"device_total_bytes", device.value("total_bytes", std::uint64_t{0})},
                       {"budget_bytes", ticket.budget_bytes()},
                       {"alone", ticket.alone()},
                       {"waited_seconds", ticket.waited_seconds()},
                       {"started_at", ticket.started_at()},
                       {"retries", json::array()}};
  spdlog::debug("{}: memory estimate {} for {} processes ({}), budget {}", opt.candidate.filename().string(),
                per_process ? format_bytes(request.bytes) : "unknown", processes, estimate.value("method", ""),
                format_bytes(ticket.budget_bytes()));
  return ticket;
}

void release_device_memory(MemoryTicket& ticket, json& doc) {
  // Noted before the release: an evaluation that starts in the freed room starts after this time.
  const double ended_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const bool shared = ticket.release();
  if (!doc.contains("memory")) return;
  doc["memory"]["shared_device"] = shared;
  doc["memory"]["ended_at"] = ended_at;
}

namespace {
// Whether the evaluation ran out of `memory` ("device_oom", or "host_oom": a worker the kernel's
// out-of-memory killer ended, eval_run.cc): the candidate's runtime error, or the reference's failure.
bool out_of(const json& doc, const std::string& memory) {
  const json error = doc.value("error", json::object());
  const std::string status = doc.value("status", "");
  return (status == status::kRuntimeError && error.value("kind", "") == memory) ||
         (status == status::kProblemError && error.value("cause", "") == memory);
}
}  // namespace

bool retry_alone(const json& doc) {
  const json memory = doc.value("memory", json::object());
  if (!memory.value("shared_device", false) || memory.value("alone", false)) return false;
  return out_of(doc, "device_oom") || out_of(doc, "host_oom");
}

bool retry_on_host_path(const json& doc, bool device_path_forced) {
  const json env = doc.value("env", json::object());
  return !device_path_forced && env.value("device_transport", "host") != "host" && out_of(doc, "device_oom");
}

}  // namespace kforge

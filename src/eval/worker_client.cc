#include "eval/worker_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kforge {

bool is_device_oom(const WorkerReply& reply) {
  return reply.kind == WorkerReply::kError && reply.body.contains("error") && reply.body["error"].is_object() &&
         reply.body["error"].value("kind", "") == "device_oom";
}

using Clock = std::chrono::steady_clock;

WorkerClient::WorkerClient(std::string role, std::unique_ptr<Subprocess> process)
    : role_(std::move(role)), process_(std::move(process)), id_rng_(std::random_device{}()) {}

WorkerReply WorkerClient::request(const std::string& cmd, nlohmann::json args,
                                  std::chrono::duration<double> timeout) {
  return wait(send(cmd, std::move(args), timeout));
}

PendingRequest WorkerClient::send(const std::string& cmd, nlohmann::json args, std::chrono::duration<double> timeout) {
  PendingRequest pending;
  pending.cmd = cmd;
  pending.sent = Clock::now();
  pending.deadline = pending.sent + std::chrono::duration_cast<Clock::duration>(timeout);
  if (!alive_) return pending;
  // Unpredictable ids: replies a candidate forged in advance never match a real request.
  pending.id = (id_rng_() << 20) ^ next_id_++;
  args["cmd"] = cmd;
  args["id"] = pending.id;
  process_->send_line(args.dump());
  return pending;
}

WorkerReply WorkerClient::wait(const PendingRequest& pending) {
  WorkerReply reply;
  if (!alive_) {
    reply.kind = WorkerReply::kDied;
    reply.detail = fmt::format("the {} process is no longer running", role_);
    return reply;
  }
  std::string line;
  for (;;) {
    WaitOutcome outcome = process_->wait_line(pending.deadline, &line);
    reply.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - pending.sent).count();
    if (outcome == WaitOutcome::kTimeout) {
      process_->kill_tree();
      alive_ = false;
      reply.kind = WorkerReply::kTimeout;
      reply.detail = fmt::format("no answer to '{}' within {:.1f} s", pending.cmd,
                                 std::chrono::duration<double>(pending.deadline - pending.sent).count());
      return reply;
    }
    if (outcome == WaitOutcome::kOutputFlood) {
      process_->kill_tree();
      alive_ = false;
      reply.kind = WorkerReply::kFlood;
      reply.detail = fmt::format("the {} process printed more than the output limit ({} bytes seen)", role_,
                                 process_->log_bytes());
      return reply;
    }
    if (outcome == WaitOutcome::kExited) {
      process_->kill_tree();
      alive_ = false;
      reply.kind = WorkerReply::kDied;
      reply.detail = fmt::format("the {} process ended during '{}' ({})", role_, pending.cmd, process_->exit_status().describe());
      return reply;
    }
    auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      reply.kind = WorkerReply::kProtocol;
      reply.detail = fmt::format("the {} process sent a malformed reply: {}", role_, line.substr(0, 200));
      // Untrusted candidate code can write anything to the channel: skip its noise and keep
      // waiting for the real reply. The reference is kforge's own code: stop at once.
      if (role_ == "candidate") continue;
      return reply;
    }
    if (!parsed.contains("id") || parsed["id"] != pending.id) continue;  // stale or forged: not ours
    reply.body = parsed;
    reply.kind = parsed.value("ok", false) ? WorkerReply::kOk : WorkerReply::kError;
    spdlog::debug("{} {}: {:.1f} ms", role_, pending.cmd, reply.wall_ms);
    return reply;
  }
}

void WorkerClient::shutdown() {
  // Everything a worker produces is read before this point; its interpreter's own teardown
  // (about a second with torch loaded) buys nothing, so it is killed outright.
  process_->kill_tree();
  alive_ = false;
}

}  // namespace kforge

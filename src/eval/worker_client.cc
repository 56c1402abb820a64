#include "eval/worker_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "eval/candidate_replies.h"

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
  if (role_ == "candidate") {  // kept to check its reply against; import facts and the like stay out
    args.erase("import_facts");
    pending.args = std::move(args);
  }
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
    if (role_ == "candidate") {
      // Untrusted code shares the candidate's process and can write to its reply channel: a line
      // that is not exactly the reply to this request (malformed, unsolicited, a second one, the
      // wrong command or types) is a broken protocol, and nothing more is believed from it.
      auto problem = parsed.is_discarded()
                         ? std::optional<std::string>("a line that is not JSON: " + line.substr(0, 120))
                         : candidate_reply_problem(pending.cmd, pending.args, pending.id, parsed);
      if (problem) {
        process_->kill_tree();
        alive_ = false;
        reply.kind = WorkerReply::kProtocol;
        reply.detail = fmt::format("the candidate's process broke the reply protocol: {}", *problem);
        return reply;
      }
    } else if (parsed.is_discarded() || !parsed.is_object()) {
      reply.kind = WorkerReply::kProtocol;
      reply.detail = fmt::format("the {} process sent a malformed reply: {}", role_, line.substr(0, 200));
      return reply;
    }
    if (!parsed.contains("id") || parsed["id"] != pending.id) continue;  // the reference's: stale
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

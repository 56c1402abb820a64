#include "bench/relayed_evaluations.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <future>

#include <fmt/format.h>

#include "bench/eval_request.h"

namespace kforge::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

RelayedEvaluations::RelayedEvaluations(int answers_in, int requests_out) : in_(answers_in), out_(requests_out) {
  // The model's exec: processes and the problem probe must not inherit the bench's pipes.
  fcntl(in_, F_SETFD, FD_CLOEXEC);
  fcntl(out_, F_SETFD, FD_CLOEXEC);
  reader_ = std::thread([this] { read_answers(); });
}

RelayedEvaluations::~RelayedEvaluations() {
  stopping_ = true;
  reader_.join();
}

void RelayedEvaluations::lose(const std::string& reason) {
  lost_ = reason;
  for (auto& [id, answer] : waiting_) answer.set_exception(std::make_exception_ptr(loop::EvaluationsLost(reason)));
  waiting_.clear();
}

void RelayedEvaluations::read_answers() {
  std::string buffer;
  char chunk[65536];
  while (!stopping_) {
    pollfd p{in_, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = ready < 0 ? -1 : ::read(in_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::lock_guard lock(mutex_);
      lose("the bench that runs this run's evaluations is gone");
      return;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
    for (std::size_t end; (end = buffer.find('\n')) != std::string::npos; buffer.erase(0, end + 1)) {
      json answer = json::parse(buffer.substr(0, end), nullptr, false);
      std::lock_guard lock(mutex_);
      auto it = answer.is_object() ? waiting_.find(answer.value("id", std::int64_t{-1})) : waiting_.end();
      if (it == waiting_.end()) continue;  // not ours to wait for (never sent by the bench)
      it->second.set_value(std::move(answer));
      waiting_.erase(it);
    }
  }
}

ExecutedRequest RelayedEvaluations::run(const json& request, ProgressFn progress, void* user) {
  std::future<json> answer;
  {
    std::lock_guard lock(mutex_);
    if (!lost_.empty()) throw loop::EvaluationsLost(lost_);
    const std::int64_t id = next_id_++;
    const std::string line = json{{"id", id}, {"request", request}}.dump() + "\n";
    answer = waiting_[id].get_future();
    for (std::size_t sent = 0; sent < line.size();) {
      ssize_t n = ::write(out_, line.data() + sent, line.size() - sent);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // EPIPE: the bench is gone (SIGPIPE is ignored by kforge)
        lose("the bench that runs this run's evaluations is gone");
        throw loop::EvaluationsLost(lost_);
      }
      sent += static_cast<std::size_t>(n);
    }
  }
  if (progress) progress("sent to the bench's executor", user);
  json a = answer.get();
  const std::string event = a.value("event", "");
  if (event == "lost") throw loop::EvaluationsLost(a.value("message", "the bench's executor is gone"));
  if (event != "result") throw loop::EvaluationFailed(a.value("message", "the evaluation failed without a message"));
  if (progress) progress("done on " + a.value("node", std::string("?")), user);
  return {a.at("result"), a.value("node", "")};
}

EvalResult RelayedEvaluations::evaluate(const EvalOptions& options, ProgressFn progress, void* user) {
  return EvalResult{run(make_eval_request(options), progress, user).result};
}

loop::PairMeasurement RelayedEvaluations::measure_pair(const EvalOptions& options, const fs::path& best,
                                                       const fs::path& challenger, ProgressFn progress, void* user) {
  const json result = run(make_pair_request(options, best, challenger), progress, user).result;
  try {
    return loop::pair_measurement_from_json(result);
  } catch (const json::exception& e) {
    throw loop::EvaluationFailed(fmt::format("a malformed head-to-head result came back: {}", e.what()));
  }
}

json RelayedEvaluations::profile(const profile::ProfileOptions& /*options*/, ProgressFn /*progress*/, void* /*user*/) {
  throw std::runtime_error("not profiled: this run's evaluations run through the bench's executor, not on this host");
}

}  // namespace kforge::bench

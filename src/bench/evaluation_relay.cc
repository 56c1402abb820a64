#include "bench/evaluation_relay.h"

#include <spdlog/spdlog.h>

namespace kforge::bench {

using json = nlohmann::json;

EvaluationRelay::~EvaluationRelay() {
  for (auto& t : running_) t.join();
}

void EvaluationRelay::handle(const std::string& line) {
  json message = json::parse(line, nullptr, false);
  if (!message.is_object() || !message.contains("id") || !message.contains("request")) {
    spdlog::warn("bench: unexpected line from a run: {}", line.substr(0, 200));
    return;
  }
  running_.emplace_back([this, id = message["id"], request = std::move(message["request"])] {
    json answer = {{"id", id}};
    std::string node, lost;
    try {
      ExecutedRequest done = executor_.run_request(request);
      node = done.node;
      answer.update({{"event", "result"}, {"node", done.node}, {"result", std::move(done.result)}});
    } catch (const ExecutorLost& e) {
      lost = e.what();
      answer.update({{"event", "lost"}, {"message", e.what()}});
    } catch (const std::exception& e) {
      answer.update({{"event", "failed"}, {"message", e.what()}});
    }
    std::lock_guard lock(mutex_);
    if (!node.empty()) last_node_ = node;
    if (!lost.empty()) lost_ = lost;
    answers_.push_back(answer.dump());
  });
}

void EvaluationRelay::deliver(const std::function<bool(const std::string&)>& send) {
  std::lock_guard lock(mutex_);
  for (; !answers_.empty(); answers_.pop_front())
    if (!send(answers_.front())) return;  // the run is gone
}

std::string EvaluationRelay::lost() const {
  std::lock_guard lock(mutex_);
  return lost_;
}

std::string EvaluationRelay::last_node() const {
  std::lock_guard lock(mutex_);
  return last_node_;
}

}  // namespace kforge::bench

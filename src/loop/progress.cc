#include "util/clean_text.h"
#include "loop/progress.h"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kforge::loop {

void Progress::set_round(int round, int total) {
  std::lock_guard lock(mutex_);
  round_ = round;
  total_ = total;
  redraw();
}

void Progress::set_candidate(const std::string& step, const std::string& status) {
  std::lock_guard lock(mutex_);
  step_ = step;
  status_ = status;
  redraw();
}

void Progress::set_best(std::optional<double> speedup) {
  std::lock_guard lock(mutex_);
  best_ = speedup;
  redraw();
}

void Progress::set_tokens(std::int64_t tokens) {
  std::lock_guard lock(mutex_);
  tokens_ = tokens;
  redraw();
}

void Progress::event(const std::string& text) {
  const std::string message = terminal_line(text);  // events quote candidates' errors
  std::lock_guard lock(mutex_);
  if (!live_) {
    spdlog::info("{}", message);
    return;
  }
  fmt::print(stderr, "\r\033[K{}\n", message);
  drawn_ = false;
  redraw();
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (live_ && drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

void Progress::redraw() {
  if (!live_) return;
  std::string best = best_ ? fmt::format("{:.2f}x", *best_) : "none";
  std::string line = fmt::format("[round {}/{}] {} {} | best {} | {} tokens", round_, total_, step_, status_, best, tokens_);
  if (line.size() > 150) line = line.substr(0, 147) + "...";
  fmt::print(stderr, "\r\033[K{}", line);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace kforge::loop

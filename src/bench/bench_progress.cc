#include "util/clean_text.h"
#include "bench/bench_progress.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace kforge::bench {

std::string format_duration(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::optional<double> BenchProgress::eta_seconds(double mean_problem_s, int left, int jobs) {
  if (mean_problem_s <= 0 || left < 0) return std::nullopt;
  int parallel = std::max(1, std::min(jobs, left));
  return mean_problem_s * left / parallel;
}

BenchProgress::BenchProgress(bool live, int total, int done, int failed, int jobs)
    : live_(live), total_(total), done_(done), failed_(failed), jobs_(jobs) {}

std::string BenchProgress::status_text() const {
  std::string s = fmt::format("{}/{} done, {} failed", done_, total_, failed_);
  if (!running_.empty()) {
    s += ", running:";
    for (const auto& r : running_) s += " " + r;
  }
  if (finished_here_ > 0) {
    if (auto eta = eta_seconds(seconds_here_ / finished_here_, total_ - done_, jobs_))
      s += fmt::format(", ETA {}", format_duration(*eta));
  }
  return s;
}

void BenchProgress::started(const std::string& name) {
  std::lock_guard lock(mutex_);
  running_.insert(name);
  started_at_[name] = std::chrono::steady_clock::now();
  if (live_) redraw();
  else spdlog::info("bench: {} started ({})", name, status_text());
}

void BenchProgress::finished(const std::string& name, bool correct, const std::string& summary) {
  std::lock_guard lock(mutex_);
  running_.erase(name);
  ++done_;
  if (!correct) ++failed_;
  if (auto it = started_at_.find(name); it != started_at_.end()) {
    seconds_here_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second).count();
    ++finished_here_;
    started_at_.erase(it);
  }
  // The summary quotes what the candidate printed: no escape sequence of its reaches the terminal.
  std::string line = fmt::format("{}: {} ({})", name, terminal_line(summary), status_text());
  if (live_) {
    fmt::print(stderr, "\r\033[K[bench] {}\n", line);
    redraw();
  } else {
    spdlog::info("bench: {}", line);
  }
}

void BenchProgress::event(const std::string& text) {
  const std::string message = terminal_line(text);
  std::lock_guard lock(mutex_);
  if (live_) {
    fmt::print(stderr, "\r\033[K[bench] {}\n", message);
    redraw();
  } else {
    spdlog::info("bench: {}", message);
  }
}

void BenchProgress::finish() {
  std::lock_guard lock(mutex_);
  if (live_ && drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

void BenchProgress::redraw() {
  fmt::print(stderr, "\r\033[K[bench] {}", status_text());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace kforge::bench

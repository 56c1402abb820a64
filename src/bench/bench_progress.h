// What a bench shows while it works: problems done/total, failures, what is running, and an ETA.
// On a terminal one status line is redrawn in place with events printed above it; otherwise each
// event is a plain log line that carries the same counts.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace kforge::bench {

class BenchProgress {
 public:
  // `done` and `failed` count problems finished before this session (a resumed bench).
  BenchProgress(bool live, int total, int done, int failed, int jobs);
  ~BenchProgress() { finish(); }

  void started(const std::string& name);
  void finished(const std::string& name, bool correct, const std::string& summary);
  void event(const std::string& message);
  void finish();  // clears the status line

  // "3/10 done, 1 failed, running: a, b, ETA 2m05s" (the ETA once a problem finished here).
  std::string status_text() const;

  // Seconds left: the mean time of the problems finished in this session, times the problems
  // left, divided by how many run at once. nullopt before the first one finishes.
  static std::optional<double> eta_seconds(double mean_problem_s, int left, int jobs);

 private:
  void redraw();  // mutex held
  bool live_;
  int total_, done_, failed_, jobs_;
  int finished_here_ = 0;
  double seconds_here_ = 0;
  std::set<std::string> running_;
  std::map<std::string, std::chrono::steady_clock::time_point> started_at_;
  mutable std::mutex mutex_;
  bool drawn_ = false;
};

// 125 -> "2m05s", 3725 -> "1h02m", 9 -> "9s".
std::string format_duration(double seconds);

}  // namespace kforge::bench

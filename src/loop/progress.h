// What a run shows while it works: on a terminal, one status line redrawn in place (round,
// candidate, its status, best speedup, tokens) with events printed above it; otherwise plain
// log lines for the events only, so logs stay readable when redirected.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace kforge::loop {

class Progress {
 public:
  explicit Progress(bool live) : live_(live) {}
  ~Progress() { finish(); }

  void set_round(int round, int total);
  void set_candidate(const std::string& step, const std::string& status);
  void set_best(std::optional<double> speedup);
  void set_tokens(std::int64_t tokens);
  void event(const std::string& message);
  void finish();  // clears the status line

 private:
  void redraw();  // mutex held
  bool live_;
  std::mutex mutex_;
  int round_ = 0, total_ = 0;
  std::string step_, status_;
  std::optional<double> best_;
  std::int64_t tokens_ = 0;
  bool drawn_ = false;
};

}  // namespace kforge::loop

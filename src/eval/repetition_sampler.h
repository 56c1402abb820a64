// Which input set each timed repetition runs on, and which repetitions kforge checks afterwards.
//
// Drawn in kforge's own process from a seed the candidate never sees (not the evaluation's seed,
// which the worker is told). The schedule never repeats a set in consecutive repetitions, so an
// output remembered from the previous call belongs to other inputs; the picks are drawn only after
// a block returned, so nothing the candidate sees while it runs says which calls will be looked at.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace kforge {

class RepetitionSampler {
 public:
  RepetitionSampler();                               // seeded from std::random_device
  explicit RepetitionSampler(std::uint64_t seed);    // for tests

  // One input set index in [0, sets) per repetition; with two or more sets, no two consecutive
  // repetitions (across blocks too) share one. Empty when sets <= 0.
  std::vector<int> schedule(int reps, int sets);

  // `count` distinct repetitions of a block of `reps` (all of them when reps <= count), ascending.
  std::vector<int> picks(int reps, int count);

 private:
  std::mt19937_64 rng_;
  int last_set_ = -1;
};

}  // namespace kforge

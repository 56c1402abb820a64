#include "eval/repetition_sampler.h"

#include <algorithm>
#include <numeric>

namespace kforge {

RepetitionSampler::RepetitionSampler() : rng_(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)) {}

RepetitionSampler::RepetitionSampler(std::uint64_t seed) : rng_(seed) {}

std::vector<int> RepetitionSampler::schedule(int reps, int sets) {
  std::vector<int> out;
  if (sets <= 0) return out;
  out.reserve(static_cast<std::size_t>(std::max(reps, 0)));
  for (int i = 0; i < reps; ++i) {
    int set = 0;
    if (sets > 1) {
      // Uniform over the sets other than the last one used.
      const int others = last_set_ >= 0 && last_set_ < sets ? sets - 1 : sets;
      set = std::uniform_int_distribution<int>(0, others - 1)(rng_);
      if (others == sets - 1 && set >= last_set_) ++set;
    }
    out.push_back(set);
    last_set_ = set;
  }
  return out;
}

std::vector<int> RepetitionSampler::picks(int reps, int count) {
  std::vector<int> all(static_cast<std::size_t>(std::max(reps, 0)));
  std::iota(all.begin(), all.end(), 0);
  if (count < reps) {
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(static_cast<std::size_t>(std::max(count, 0)));
  }
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace kforge

#include "cli/suggest.h"

#include <algorithm>

namespace kforge {

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance: Levenshtein plus transpositions of adjacent letters.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& choices) {
  std::optional<std::string> best;
  int best_distance = 0;
  for (const auto& c : choices) {
    const int d = edit_distance(word, c);
    if (d > 2 || 2 * d >= static_cast<int>(word.size())) continue;
    if (!best || d < best_distance) best = c, best_distance = d;
  }
  return best;
}

}  // namespace kforge

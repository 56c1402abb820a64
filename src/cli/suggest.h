// "did you mean ...?" for a mistyped subcommand.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kforge {

// Edit distance (insertions, deletions, substitutions and swaps of neighbours, each 1).
int edit_distance(const std::string& a, const std::string& b);

// The choice nearest to `word`, when one is near enough to be what was meant: at most 2 edits,
// and fewer than half of the word's letters; ties go to the earlier choice.
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& choices);

}  // namespace kforge

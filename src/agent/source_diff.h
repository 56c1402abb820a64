// What changed between two candidates, as a unified diff (GNU diff -u), for the prompts: the model
// sees how its latest attempt differs from the best instead of two whole programs side by side.
#pragma once

#include <string>

namespace kforge::agent {

// A unified diff from `before` to `after`, labelled with the two names and cut after `max_lines`
// lines (saying how many were left out). Empty when the sources are equal; a short explanation
// when diff cannot run.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_name,
                         const std::string& after_name, std::size_t max_lines = 120);

}  // namespace kforge::agent

// Which problems a bench runs, and which candidate file goes with each (`--candidates DIR`).
//
// SUITE is one of
//   - a directory: every *.py file directly in it whose name does not start with "_" (a
//     KernelBench checkout's level1/ works unmodified);
//   - a list file (any other regular file): one problem path per line, relative to the list
//     file's directory; blank lines and lines starting with '#' are skipped;
//   - a glob pattern (containing *, ? or [): every matching *.py file.
// Problems are ordered by file name; a problem's name is its file name without ".py". Two
// problems with the same file name are an error (their candidates could not be told apart).
//
// Candidate matching: the candidate for problem NAME.py is DIR/NAME.py (same file name).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::bench {

struct SuiteProblem {
  std::string name;             // file name without .py
  std::filesystem::path path;   // absolute
};

// Throws InputError (with the reason) for a suite that names nothing or a missing file.
std::vector<SuiteProblem> discover_suite(const std::string& suite);

// DIR/<problem file name> when it exists, else an empty path.
std::filesystem::path match_candidate(const std::filesystem::path& candidates_dir, const SuiteProblem& problem);

}  // namespace kforge::bench

// The steps of `kforge model` are other programs (the worker's analysis, one `kforge run` per region):
// each runs to its end with this process's terminal, or with its output in a log file.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kforge::model {

struct ChildResult {
  int exit_code = -1;  // -1: did not start; 128 + N: ended by signal N
  std::string describe() const;
};

// Runs argv[0] (looked up on PATH) with `env` added to this process's environment. A non-empty
// `log` gets the child's stdout and stderr; otherwise they are this process's.
ChildResult run_child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                      const std::filesystem::path& log = {});

}  // namespace kforge::model

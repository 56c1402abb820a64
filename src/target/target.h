// A target platform, read from targets/<name>/target.toml. Targets are data: adding a platform
// means adding a folder, never changing C++ (see docs/targets.md for the keys).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct Target {
  std::string name;
  std::string description;
  std::string language;      // kernel source language: cpp, opencl, cuda, triton, ...
  std::string device;        // device kind the worker runs on: cpu or cuda
  double compile_timeout_s = 300;
  std::filesystem::path dir;
  std::filesystem::path example_reference;
  std::filesystem::path example_candidate;
  std::filesystem::path notes;
  double address_space_gb = 0;  // RLIMIT_AS for the candidate; 0 = none
  std::vector<std::string> env_pass;
  std::map<std::string, std::string> env_set;
  std::vector<std::string> allowed_torch_calls;  // [checks] allowed_torch_calls
};

// Reads one target folder; throws InputError naming the file and key on a bad or missing value.
Target load_target(const std::filesystem::path& dir);

class TargetRegistry {
 public:
  // Every folder under `targets_dir` that holds a target.toml.
  static TargetRegistry load(const std::filesystem::path& targets_dir);

  const std::vector<Target>& all() const { return targets_; }
  const Target* find(const std::string& name) const;
  // find() or an InputError listing the known targets.
  const Target& get(const std::string& name) const;

 private:
  std::vector<Target> targets_;
};

}  // namespace kforge

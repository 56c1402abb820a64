// Whether this machine can evaluate a target, and what to install where it cannot. A target
// needs its device kind (target.toml `device`) plus what its optional [readiness] table lists:
//   [readiness]
//   python_modules = ["triton"]  # importable by the worker's interpreter
//   tools = ["g++"]              # executables on PATH
//   compile_only = true          # without its device, `--compile-only` still checks candidates
//   hint = "..."                 # how to install what is missing, shown with the problems
// What this machine has comes from MachineFacts (see machine_probe.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "target/target.h"

namespace kforge {

enum class Readiness {
  kRunnable,       // evaluations run here
  kCompileOnly,    // its device is missing; `--compile-only` evaluations run here
  kNeedsHardware,  // its device is missing, and nothing of it runs without
  kNotReady,       // software is missing (torch, a module, a tool): fix it and it runs
};

// "runnable", "compile-only", "needs hardware", "not ready".
const char* readiness_name(Readiness r);

struct ReadinessNeeds {
  std::vector<std::string> python_modules;
  std::vector<std::string> tools;
  bool compile_only = false;
  std::string hint;
};

// The [readiness] table of the target's target.toml (all empty when it has none). Throws
// InputError on a table with a key of the wrong type.
ReadinessNeeds readiness_needs(const Target& target);

struct MachineFacts {
  std::string torch_problem;               // empty when the interpreter imports torch
  bool has_cuda_device = false;            // torch sees at least one GPU
  std::set<std::string> python_modules;    // importable by the interpreter (of those asked about)
  std::set<std::string> tools;             // found on PATH (of those asked about)
};

struct TargetReadiness {
  Readiness level = Readiness::kNotReady;
  std::vector<std::string> problems;  // each: what is missing and how to fix it
};

TargetReadiness target_readiness(const Target& target, const ReadinessNeeds& needs, const MachineFacts& facts);

}  // namespace kforge

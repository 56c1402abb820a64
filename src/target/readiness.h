// Whether a target can run on this machine, from what its target.toml [requires] declares: runnable
// here, compile-only (its hardware is absent but candidates can still be built and checked), needs
// hardware, or missing software. `kforge targets` and `kforge doctor` show it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "target/target.h"

namespace kforge {

enum class ReadinessState { kRunnable, kCompileOnly, kNeedsHardware, kMissingSoftware };

struct Readiness {
  ReadinessState state = ReadinessState::kRunnable;
  std::string reason;  // one line: what was found, or what is missing
};

// "runnable", "compile-only", "needs hardware", "not installed".
const char* readiness_label(ReadinessState state);

// How the machine is looked at; a test gives its own.
struct MachineProbe {
  std::function<bool(const std::string& module)> has_python_module;
  std::function<bool(const std::string& program)> has_command;
  std::function<std::string(const std::string& glob)> first_match;  // "" when nothing matches
};

// This machine: programs on PATH, glob(3) for files and device nodes, and Python modules as found by
// `python` (one run for all the modules the targets name, importlib.util.find_spec: nothing imported).
MachineProbe this_machine(const std::string& python, const std::vector<Target>& targets);

Readiness assess_readiness(const Target& target, const MachineProbe& probe);

}  // namespace kforge

// What this machine offers the worker: asks the interpreter about torch, its GPUs and the given
// Python modules, and looks the given tools up on PATH. Used by `kforge doctor` and target readiness.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target/readiness.h"

namespace kforge {

struct MachineProbe {
  MachineFacts facts;
  // What the interpreter said: python, executable, torch, torch_cuda, gpus [names], modules {name: bool};
  // or interpreter_error when it did not run or answer.
  nlohmann::json details = nlohmann::json::object();
};

// Runs `python` once (it imports torch: seconds). Never throws for a broken interpreter: that is a fact.
MachineProbe probe_machine(const std::string& python, const std::vector<std::string>& modules,
                           const std::vector<std::string>& tools);

// The absolute path of `name` on PATH (or `name` itself when it has a slash and is executable); empty when absent.
std::string find_on_path(const std::string& name);

}  // namespace kforge

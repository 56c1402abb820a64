// What the worker's interpreter offers: its Python, torch and the GPUs torch sees, for `kforge doctor`.
// Which targets can run here is target/readiness.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

// What the interpreter said: python, executable, torch, torch_cuda, gpus [names], and worker_error when
// kforge's worker does not import (a package of worker/requirements.txt missing); or torch_error when
// it cannot import torch, or interpreter_error when it did not run or answer. Runs `python` once (it
// imports torch and the worker: seconds). Never throws for a broken interpreter: that is a finding.
nlohmann::json probe_interpreter(const std::string& python);

// The absolute path of `name` on PATH (or `name` itself when it has a slash and is executable); empty when absent.
std::string find_on_path(const std::string& name);

}  // namespace kforge

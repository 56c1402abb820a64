// What a result was produced with, written into every JSON output (EvalResult `env`, a bench's
// report.json) so a figure read later can be traced to the software and machine behind it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

// kforge's version (the project version of the build).
const char* kforge_version();

// Remembers the command line (main() calls this once); provenance() reports it.
void set_command_line(int argc, char** argv);

// {"kforge_version", "command_line": [argv...], "host": {"name", "os", "cpu", "cpus", "gpus": [...]}}.
// cpu: the model name of /proc/cpuinfo; gpus: the NVIDIA GPUs the driver lists (empty without one).
nlohmann::json provenance();

// provenance() with the worker's interpreter: "python" (its path), "python_version" ("3.13.5") and
// "torch" (the installed torch's version from its package metadata: nothing is imported, so it
// takes well under a second; "" without torch, both "" when the interpreter does not run).
nlohmann::json environment(const std::string& python);

}  // namespace kforge

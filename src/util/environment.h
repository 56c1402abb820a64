// Reading the process environment, and telling which variables must never reach a worker.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kforge {

std::map<std::string, std::string> current_environment();

// True for names that may hold credentials (API keys, tokens, passwords, secrets): such variables
// are never passed to a worker, even when a target or a user asks for them.
bool looks_secret(std::string_view name);

// The CPUs this process may run on (its affinity mask), at least 1.
int available_cpus();

}  // namespace kforge

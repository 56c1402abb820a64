// `--resume` continues with the stored settings; a setting given beside it is refused, never
// silently ignored.
#pragma once

#include <set>
#include <string>

#include <CLI/CLI.hpp>

namespace kforge {

// Throws InputError naming the first option given on `cmd` whose long name is not in `allowed`
// (positionals included), e.g. `--out cannot be changed on --resume: bench 3 keeps ...`.
void reject_settings_with_resume(const CLI::App& cmd, const std::set<std::string>& allowed, const std::string& what);

}  // namespace kforge

// Where a command's result goes. Every command that produces one takes `--json FILE`; FILE `-` is
// standard output, which then carries the JSON alone: the human-readable result moves to
// standard error. Logs and progress always go to standard error.
#pragma once

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace kforge {

struct ResultOutput {
  std::string json_path;  // empty: no JSON; "-": standard output

  bool json_on_stdout() const { return json_path == "-"; }
  // Where the human-readable result is printed.
  std::FILE* text() const { return json_on_stdout() ? stderr : stdout; }
  // Writes `doc` (indented) where --json asked for; nothing without --json. Throws InputError when
  // the file cannot be written.
  void write_json(const nlohmann::json& doc) const;
};

// Adds `--json FILE` to `cmd`; `what` says what the document holds.
CLI::Option* add_json_option(CLI::App* cmd, ResultOutput& out, const std::string& what);

}  // namespace kforge

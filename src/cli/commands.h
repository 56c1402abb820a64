// Each subcommand lives in its own file and registers itself on the root CLI11 app.
// `register_*` adds the subcommand and its options; the callback it installs sets
// `*exit_code` when the subcommand runs.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/global_options.h"

namespace kforge {

void register_eval_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_targets_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_llm_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_run_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_report_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_bench_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_profile_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_eval_request_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_doctor_command(CLI::App& app, GlobalOptions& global, int* exit_code);
void register_model_command(CLI::App& app, GlobalOptions& global, int* exit_code);

// The whole command line: global options and every subcommand (the hidden `completion` and `man` too).
void build_cli(CLI::App& app, GlobalOptions& global, int* exit_code);

}  // namespace kforge

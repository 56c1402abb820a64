// kforge: thin driver that wires the subcommands together.
#include <csignal>
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "util/errors.h"
#include "util/provenance.h"
#include "util/subprocess.h"

int main(int argc, char** argv) {
  using namespace kforge;
  CLI::App app{"kforge: turns a PyTorch reference model into fast, verified kernels"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  app.set_version_flag("--version", std::string("kforge ") + kforge_version());
  set_command_line(argc, argv);  // recorded in every JSON output

  GlobalOptions global;
  app.add_option("--config", global.config_path, "kforge.toml to read (default: $KFORGE_CONFIG, ./kforge.toml, ~/.config/kforge/kforge.toml, ~/.kforge/kforge.toml)");
  app.add_flag("-v,--verbose", global.verbose, "Log debug details");
  app.add_flag("-q,--quiet", global.quiet, "Log only warnings and errors");

  signal(SIGPIPE, SIG_IGN);  // a worker that died must not take kforge down with it
  become_subreaper();  // detached grandchildren of workers come back to us to be killed
  int exit_code = kExitOk;
  register_eval_command(app, global, &exit_code);
  register_targets_command(app, global, &exit_code);
  register_llm_command(app, global, &exit_code);
  register_run_command(app, global, &exit_code);
  register_report_command(app, global, &exit_code);
  register_bench_command(app, global, &exit_code);
  register_profile_command(app, global, &exit_code);
  register_eval_request_command(app, global, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "kforge: {}\n", e.what());
    return kExitUsage;
  } catch (const InputError& e) {
    fmt::print(stderr, "kforge: error: {}\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kforge: internal error: {}\n", e.what());
    return kExitInternal;
  }
  return exit_code;
}

// kforge: thin driver that wires the subcommands together.
#include <csignal>
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/suggest.h"
#include "util/errors.h"
#include "util/provenance.h"
#include "util/subprocess.h"

int main(int argc, char** argv) {
  using namespace kforge;
  CLI::App app{"kforge: turns a PyTorch reference model into fast, verified kernels"};
  GlobalOptions global;
  int exit_code = kExitOk;
  build_cli(app, global, &exit_code);
  set_command_line(argc, argv);  // recorded in every JSON output

  if (auto mistake = find_mistake(app, std::vector<std::string>(argv + 1, argv + argc))) {
    fmt::print(stderr, "kforge: {}\n", *mistake);
    return kExitUsage;
  }

  signal(SIGPIPE, SIG_IGN);  // a worker that died must not take kforge down with it
  become_subreaper();  // detached grandchildren of workers come back to us to be killed
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

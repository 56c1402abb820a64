// kforge: thin driver that wires the subcommands together.
#include <csignal>
#include <cstdio>
#include <cstring>
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

namespace {

// The first word that is neither an option nor the value of --config: what should be a subcommand.
const char* first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0) {
      ++i;
      continue;
    }
    if (argv[i][0] != '-') return argv[i];
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kforge;
  CLI::App app{"kforge: turns a PyTorch reference model into fast, verified kernels"};
  GlobalOptions global;
  int exit_code = kExitOk;
  build_cli(app, global, &exit_code);
  set_command_line(argc, argv);  // recorded in every JSON output

  const char* word = first_word(argc, argv);
  if (word && app.get_subcommands([word](const CLI::App* s) { return s->get_name() == word; }).empty()) {
    std::vector<std::string> names;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      names.push_back(s->get_name());
    auto near = nearest(word, names);
    fmt::print(stderr, "kforge: unknown command '{}'{}; see `kforge --help`\n", word,
               near ? fmt::format(" (did you mean {}?)", *near) : "");
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

// `kforge targets`: list the target platforms found under <data>/targets.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "target/target.h"
#include "util/paths.h"

namespace kforge {

void register_targets_command(CLI::App& app, GlobalOptions&, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("targets", "List the target platforms");
  cmd->callback([exit_code] {
    auto registry = TargetRegistry::load(data_dir() / "targets");
    fmt::print("{:<10} {:<8} {:<8} {}\n", "TARGET", "DEVICE", "LANG", "DESCRIPTION");
    for (const auto& t : registry.all())
      fmt::print("{:<10} {:<8} {:<8} {}\n", t.name, t.device, t.language, t.description);
    *exit_code = kExitOk;
  });
}

}  // namespace kforge

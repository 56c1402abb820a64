// `kforge targets [--json FILE]`: list the target platforms found under <data>/targets.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/result_output.h"
#include "target/target.h"
#include "util/paths.h"

namespace kforge {

void register_targets_command(CLI::App& app, GlobalOptions&, int* exit_code) {
  auto out = std::make_shared<ResultOutput>();
  CLI::App* cmd = app.add_subcommand("targets", "List the target platforms");
  add_json_option(cmd, *out, "the list of targets");
  cmd->callback([out, exit_code] {
    auto registry = TargetRegistry::load(data_dir() / "targets");
    nlohmann::json list = nlohmann::json::array();
    std::string text = fmt::format("{:<10} {:<8} {:<8} {}\n", "TARGET", "DEVICE", "LANG", "DESCRIPTION");
    for (const auto& t : registry.all()) {
      text += fmt::format("{:<10} {:<8} {:<8} {}\n", t.name, t.device, t.language, t.description);
      list.push_back({{"name", t.name}, {"device", t.device}, {"language", t.language}, {"description", t.description},
                      {"dir", t.dir.string()}});
    }
    out->write_json({{"targets", list}});
    fmt::print(out->text(), "{}", text);
    *exit_code = kExitOk;
  });
}

}  // namespace kforge

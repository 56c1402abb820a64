// `kforge targets [--json FILE]`: list the target platforms found under <data>/targets, with whether
// each can run here (target/readiness.h).
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/result_output.h"
#include "config/config.h"
#include "eval/worker_launch.h"
#include "target/readiness.h"
#include "target/target.h"
#include "util/paths.h"
#include "util/provenance.h"

namespace kforge {

void register_targets_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto out = std::make_shared<ResultOutput>();
  CLI::App* cmd = app.add_subcommand("targets", "List the target platforms and whether each can run here");
  auto python = std::make_shared<std::string>();
  cmd->add_option("--python", *python, "Interpreter whose modules are checked (default: worker.python or .venv)");
  add_json_option(cmd, *out, "the list of targets, with whether each can run here");
  cmd->callback([&global, exit_code, out, python] {
    auto registry = TargetRegistry::load(data_dir() / "targets");
    Config config = load_config(global.config_path);
    const std::string interpreter = resolve_python(*python, config.get_string("worker.python").value_or(""));
    auto probe = this_machine(interpreter, registry.all());
    nlohmann::json list = nlohmann::json::array();
    std::string text = fmt::format("{:<8} {:<6} {:<7} {:<15} {}\n", "TARGET", "DEVICE", "LANG", "HERE", "DESCRIPTION");
    for (const auto& t : registry.all()) {
      Readiness r = assess_readiness(t, probe);
      text += fmt::format("{:<8} {:<6} {:<7} {:<15} {}\n", t.name, t.device, t.language, readiness_label(r.state),
                          t.description);
      text += fmt::format("{:<39} {}\n", "", r.reason);
      list.push_back({{"name", t.name}, {"device", t.device}, {"language", t.language}, {"description", t.description},
                      {"dir", t.dir.string()}, {"readiness", readiness_label(r.state)}, {"reason", r.reason}});
    }
    if (!out->json_path.empty()) out->write_json({{"targets", list}, {"env", environment(interpreter)}});
    fmt::print(out->text(), "{}", text);
    *exit_code = kExitOk;
  });
}

}  // namespace kforge

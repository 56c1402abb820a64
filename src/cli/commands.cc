#include "cli/commands.h"

#include <string>

#include "cli/cli_docs.h"
#include "util/provenance.h"

namespace kforge {

void build_cli(CLI::App& app, GlobalOptions& global, int* exit_code) {
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  const std::string version = std::string("kforge ") + kforge_version();
  app.set_version_flag("--version", version);
  app.add_option("--config", global.config_path, "kforge.toml to read (default: $KFORGE_CONFIG, ./kforge.toml, ~/.config/kforge/kforge.toml, ~/.kforge/kforge.toml)");
  app.add_flag("-v,--verbose", global.verbose, "Log debug details");
  app.add_flag("-q,--quiet", global.quiet, "Log only warnings and errors (results are still printed)");
  register_eval_command(app, global, exit_code);
  register_targets_command(app, global, exit_code);
  register_llm_command(app, global, exit_code);
  register_run_command(app, global, exit_code);
  register_report_command(app, global, exit_code);
  register_bench_command(app, global, exit_code);
  register_model_command(app, global, exit_code);
  register_profile_command(app, global, exit_code);
  register_doctor_command(app, global, exit_code);
  register_eval_request_command(app, global, exit_code);
  register_docs_commands(app, version, exit_code);
}

}  // namespace kforge

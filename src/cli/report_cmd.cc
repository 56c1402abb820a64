// `kforge report RUN`: the trajectory of a run (finished, interrupted or killed) from the store.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "config/config.h"
#include "loop/run_summary.h"
#include "store/store.h"
#include "util/errors.h"

namespace kforge {

namespace {

struct ReportArgs {
  std::int64_t run = 0;
  bool json = false, markdown = false;
  std::string db;
};

int run_report(const ReportArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  std::filesystem::path db = !a.db.empty() ? std::filesystem::path(a.db)
                                           : std::filesystem::path(config.get_string("store.path").value_or(Store::default_path().string()));
  Store store(db);
  if (!store.run(a.run)) throw InputError(fmt::format("no run {} in {}", a.run, db.string()));
  auto summary = loop::build_summary(store, a.run);
  if (a.json) fmt::print("{}\n", summary.dump(2));
  else if (a.markdown) fmt::print("{}", loop::markdown_report(summary));
  else fmt::print("{}", loop::text_report(summary));
  return kExitOk;
}

}  // namespace

void register_report_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Print the trajectory of a `kforge run`");
  cmd->add_option("run", a->run, "Run id (printed by `kforge run`)")->required();
  auto* j = cmd->add_flag("--json", a->json, "Print the JSON summary");
  cmd->add_flag("--markdown", a->markdown, "Print the Markdown report")->excludes(j);
  cmd->add_option("--db", a->db, "SQLite store (default ~/.kforge/kforge.db)");
  cmd->callback([a, &global, exit_code] { *exit_code = run_report(*a, global); });
}

}  // namespace kforge

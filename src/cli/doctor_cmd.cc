// `kforge doctor [--python PY] [--json FILE]`: checks this machine (src/cli/doctor.h); exits 0 when
// kforge is ready, 4 (an environment problem) when it is not.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/doctor.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "eval/worker_launch.h"
#include "util/provenance.h"

namespace kforge {

namespace {

struct DoctorArgs {
  std::string python, db;
  ResultOutput out;
};

int run_doctor_command(const DoctorArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  DoctorInputs in;
  in.python = resolve_python(a.python, config.get_string("worker.python").value_or(""));
  in.store = store_path(a.db, config).string();
  DoctorReport report = run_doctor(in);
  if (!a.out.json_path.empty()) {
    nlohmann::json doc = report.to_json();
    doc["env"] = environment(in.python);
    a.out.write_json(doc);
  }
  fmt::print(a.out.text(), "{}", report.text());
  return report.ready() ? kExitOk : kExitEnvironment;
}

}  // namespace

void register_doctor_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<DoctorArgs>();
  CLI::App* cmd = app.add_subcommand("doctor", "Check that this machine can run kforge and each target, with a fix for each problem");
  cmd->add_option("--python", a->python, "Python interpreter whose torch the worker uses");
  add_db_option(cmd, a->db);
  add_json_option(cmd, a->out, "the checks");
  cmd->callback([a, &global, exit_code] { *exit_code = run_doctor_command(*a, global); });
}

}  // namespace kforge

#include "cli/doctor.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "profile/ncu_runner.h"
#include "target/machine_probe.h"
#include "target/target.h"
#include "util/paths.h"
#include "util/sandbox.h"
#include "util/subprocess.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* level_name(CheckLevel l) {
  switch (l) {
    case CheckLevel::kOk: return "ok";
    case CheckLevel::kInfo: return "info";
    case CheckLevel::kWarn: return "warn";
    case CheckLevel::kFail: return "FAIL";
  }
  return "?";
}

// The first line a tool prints for --version ("" when it does not run).
std::string version_line(const std::string& tool, const char* flag = "--version") {
  CommandResult r = run_command({tool, flag}, std::chrono::seconds(20));
  if (r.exit_code != 0) return "";
  return r.output.substr(0, r.output.find('\n'));
}

DoctorCheck data_check() {
  const fs::path data = data_dir();
  std::vector<std::string> missing;
  for (const char* part : {"worker/kforge_worker", "targets", "prompts"})
    if (!fs::is_directory(data / part)) missing.push_back(part);
  if (missing.empty()) return {"kforge data", CheckLevel::kOk, data.string() + " (worker, targets, prompts)", ""};
  return {"kforge data", CheckLevel::kFail,
          fmt::format("{} lacks {}", data.string(), fmt::join(missing, ", ")),
          "run kforge from its build tree or installation, or set KFORGE_HOME to the folder holding worker/, targets/ "
          "and prompts/"};
}

DoctorCheck store_check(const std::string& store) {
  fs::path dir = fs::absolute(store).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && ::access(dir.c_str(), W_OK) == 0) return {"store", CheckLevel::kOk, store, ""};
  return {"store", CheckLevel::kFail, fmt::format("{}: cannot write {}", store, dir.string()),
          "make that folder writable, or pick another store with --db or store.path in kforge.toml"};
}

std::vector<DoctorCheck> interpreter_checks(const std::string& python, const MachineProbe& probe) {
  std::vector<DoctorCheck> out;
  const json& d = probe.details;
  if (d.contains("interpreter_error")) {
    out.push_back({"interpreter", CheckLevel::kFail, d["interpreter_error"].get<std::string>(),
                   "run scripts/setup.sh (it makes .venv with torch), or point --python or worker.python in "
                   "kforge.toml at a working Python 3 with torch"});
    return out;
  }
  out.push_back({"interpreter", CheckLevel::kOk,
                 fmt::format("{} (Python {})", d.value("executable", python), d.value("python", "?")), ""});
  if (d.contains("torch"))
    out.push_back({"torch", CheckLevel::kOk,
                   fmt::format("{}{}", d["torch"].get<std::string>(),
                               d["torch_cuda"].is_string() ? fmt::format(" (CUDA {})", d["torch_cuda"].get<std::string>()) : " (CPU only)"),
                   ""});
  else
    out.push_back({"torch", CheckLevel::kFail, fmt::format("{} cannot import torch: {}", python, d.value("torch_error", "")),
                   fmt::format("{} -m pip install torch (or run scripts/setup.sh, or pick another interpreter with "
                               "--python / worker.python)",
                               python)});
  return out;
}

std::vector<DoctorCheck> tool_checks(const MachineProbe& probe) {
  std::vector<DoctorCheck> out;
  const char* cxx_env = std::getenv("CXX");
  const std::string cxx = cxx_env && *cxx_env ? std::string(cxx_env).substr(0, std::string(cxx_env).find(' ')) : "g++";
  const std::string cxx_path = find_on_path(cxx);
  if (cxx_path.empty())
    out.push_back({"C++ compiler", CheckLevel::kWarn, cxx + " not found", "Debian: apt install g++ (the cpu target builds with it)"});
  else
    out.push_back({"C++ compiler", CheckLevel::kOk, fmt::format("{} ({})", cxx_path, version_line(cxx_path)), ""});

  const auto gpus = probe.details.value("gpus", json::array());
  const std::string smi = find_on_path("nvidia-smi");
  std::string driver;
  if (!smi.empty()) {
    CommandResult r = run_command({smi, "--query-gpu=driver_version", "--format=csv,noheader"}, std::chrono::seconds(20));
    if (r.exit_code == 0) driver = r.output.substr(0, r.output.find('\n'));
  }
  if (!gpus.empty())
    out.push_back({"GPU", CheckLevel::kOk,
                   fmt::format("{}{}", fmt::join(gpus.get<std::vector<std::string>>(), ", "),
                               driver.empty() ? "" : " (driver " + driver + ")"),
                   ""});
  else
    out.push_back({"GPU", CheckLevel::kInfo,
                   smi.empty() ? "no NVIDIA GPU visible to torch (no nvidia-smi)"
                               : fmt::format("no NVIDIA GPU visible to torch (nvidia-smi: {})", driver.empty() ? "no driver answer" : "driver " + driver),
                   "GPU targets run compile-only here; run on a machine with an NVIDIA GPU and driver for timings"});

  const std::string nvcc = find_on_path("nvcc");
  out.push_back(nvcc.empty() ? DoctorCheck{"nvcc", CheckLevel::kInfo, "not found (optional: the cuda target builds with NVRTC)", ""}
                             : DoctorCheck{"nvcc", CheckLevel::kOk, nvcc, ""});
  auto ncu = profile::find_ncu("");
  out.push_back(ncu ? DoctorCheck{"Nsight Compute", CheckLevel::kOk, fmt::format("{} ({})", ncu->string(), profile::ncu_version(*ncu)), ""}
                    : DoctorCheck{"Nsight Compute", CheckLevel::kInfo, "ncu not found (optional: `kforge profile` uses it on a GPU)",
                                  gpus.empty() ? "" : "install Nsight Compute, or set $NCU"});
  if (auto bwrap = usable_bwrap())
    out.push_back({"bubblewrap", CheckLevel::kOk, *bwrap + " (candidates run sandboxed)", ""});
  else
    out.push_back({"bubblewrap", CheckLevel::kWarn,
                   find_on_path("bwrap").empty() ? "bwrap not found: candidates run with process-group isolation only"
                                                 : "bwrap cannot create namespaces here: candidates run with process-group isolation only",
                   "Debian: apt install bubblewrap, and allow unprivileged user namespaces "
                   "(sysctl kernel.unprivileged_userns_clone=1); see docs/isolation.md"});
  return out;
}

}  // namespace

bool DoctorReport::ready() const {
  for (const auto& c : checks)
    if (c.level == CheckLevel::kFail) return false;
  return true;
}

json DoctorReport::to_json() const {
  json j = {{"ready", ready()}, {"checks", json::array()}, {"targets", json::array()}};
  for (const auto& c : checks)
    j["checks"].push_back({{"name", c.name}, {"level", level_name(c.level)}, {"detail", c.detail}, {"fix", c.fix}});
  for (const auto& t : targets)
    j["targets"].push_back({{"name", t.name}, {"device", t.device},
                            {"readiness", readiness_name(t.readiness.level)}, {"problems", t.readiness.problems}});
  return j;
}

std::string DoctorReport::text() const {
  std::string out;
  for (const auto& c : checks) {
    out += fmt::format("{:<5} {:<15} {}\n", level_name(c.level), c.name, c.detail);
    if (!c.fix.empty() && c.level != CheckLevel::kOk) out += fmt::format("{:<21} fix: {}\n", "", c.fix);
  }
  out += "\ntargets:\n";
  std::vector<std::string> runnable;
  for (const auto& t : targets) {
    out += fmt::format("  {:<10} {:<15} {}\n", t.name, readiness_name(t.readiness.level),
                       t.readiness.problems.empty() ? "" : t.readiness.problems[0]);
    for (std::size_t i = 1; i < t.readiness.problems.size(); ++i) out += fmt::format("  {:<26} {}\n", "", t.readiness.problems[i]);
    if (t.readiness.level == Readiness::kRunnable) runnable.push_back(t.name);
  }
  out += ready() ? fmt::format("\nkforge is ready; runnable here: {}\n", runnable.empty() ? "none" : fmt::format("{}", fmt::join(runnable, ", ")))
                 : "\nkforge is not ready: fix the FAIL lines above\n";
  return out;
}

DoctorReport run_doctor(const DoctorInputs& in) {
  DoctorReport report;
  report.checks.push_back(data_check());
  std::vector<Target> targets;
  try {
    targets = TargetRegistry::load(data_dir() / "targets").all();
  } catch (const std::exception& e) {
    report.checks.push_back({"targets", CheckLevel::kFail, e.what(), "fix or remove the target folder named above"});
  }
  std::vector<std::pair<Target, ReadinessNeeds>> needs;
  std::vector<std::string> modules, tools;
  for (const auto& t : targets) {
    try {
      needs.emplace_back(t, readiness_needs(t));
    } catch (const std::exception& e) {
      report.checks.push_back({"target " + t.name, CheckLevel::kWarn, e.what(), "fix its [readiness] table"});
      continue;
    }
    modules.insert(modules.end(), needs.back().second.python_modules.begin(), needs.back().second.python_modules.end());
    tools.insert(tools.end(), needs.back().second.tools.begin(), needs.back().second.tools.end());
  }
  MachineProbe probe = probe_machine(in.python, modules, tools);
  for (auto& c : interpreter_checks(in.python, probe)) report.checks.push_back(std::move(c));
  for (auto& c : tool_checks(probe)) report.checks.push_back(std::move(c));
  report.checks.push_back(store_check(in.store));
  for (const auto& [t, n] : needs) report.targets.push_back({t.name, t.device, target_readiness(t, n, probe.facts)});
  return report;
}

}  // namespace kforge

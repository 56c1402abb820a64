#include "cli/doctor.h"

#include <unistd.h>

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "profile/ncu_runner.h"
#include "profile/profiler.h"
#include "cli/interpreter_probe.h"
#include "cli/setup_hint.h"
#include "target/readiness.h"
#include "target/target.h"
#include "util/paths.h"
#include "util/memory_cgroup.h"
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
  for (const char* part : {"worker/kforge_worker", "worker/kforge_kernels", "targets", "prompts"})
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

std::string setup_hint() { return worker_setup_hint(data_dir(), user_worker_venv()); }

std::vector<DoctorCheck> interpreter_checks(const std::string& python, const json& d) {
  std::vector<DoctorCheck> out;
  if (d.contains("interpreter_error")) {
    out.push_back({"interpreter", CheckLevel::kFail, d["interpreter_error"].get<std::string>(),
                   setup_hint() + ", or point --python or worker.python in kforge.toml at a working Python 3 "
                   "with torch"});
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
                   fmt::format("{} -m pip install torch (or {}, or pick another interpreter with "
                               "--python / worker.python)",
                               python, setup_hint())});
  if (d.contains("worker_error"))
    out.push_back({"worker", CheckLevel::kFail,
                   fmt::format("{} cannot import kforge's worker: {}", python, d["worker_error"].get<std::string>()),
                   fmt::format("{} -m pip install -r {} (or {}, or pick another interpreter with "
                               "--python / worker.python)",
                               python, (data_dir() / "worker" / "requirements.txt").string(), setup_hint())});
  else if (d.contains("torch"))
    out.push_back({"worker", CheckLevel::kOk, fmt::format("imports ({})", (data_dir() / "worker").string()), ""});
  return out;
}

std::vector<DoctorCheck> tool_checks(const json& interpreter) {
  std::vector<DoctorCheck> out;
  const char* cxx_env = std::getenv("CXX");
  const std::string cxx = cxx_env && *cxx_env ? std::string(cxx_env).substr(0, std::string(cxx_env).find(' ')) : "g++";
  const std::string cxx_path = find_on_path(cxx);
  if (cxx_path.empty())
    out.push_back({"C++ compiler", CheckLevel::kWarn, cxx + " not found", "Debian: apt install g++ (the cpu target builds with it)"});
  else
    out.push_back({"C++ compiler", CheckLevel::kOk, fmt::format("{} ({})", cxx_path, version_line(cxx_path)), ""});

  const auto gpus = interpreter.value("gpus", json::array());
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
  if (auto why = memory_cgroups_unavailable())
    out.push_back({"memory cgroup", CheckLevel::kWarn,
                   fmt::format("none can be made ({}): a candidate's memory files and tmpfs pages count against no "
                               "memory limit", *why),
                   "run kforge as root, or in a cgroup delegated to it with the memory controller; see docs/isolation.md"});
  else
    out.push_back({"memory cgroup", CheckLevel::kOk, "each candidate gets one ([sandbox] memory_gb, default half the host's memory)", ""});
  return out;
}

// Nsight Compute around a sandboxed candidate, as `kforge run` and `kforge profile` use it: the cuda
// target's example profiled once (a few seconds of GPU time). Only where there is something to check:
// a GPU, ncu and bubblewrap.
std::optional<DoctorCheck> ncu_sandbox_check(const std::string& python, bool gpu) {
  auto ncu = profile::find_ncu("");
  if (!gpu || !ncu || !usable_bwrap()) return std::nullopt;
  const fs::path cuda = data_dir() / "targets" / "cuda";
  if (!fs::exists(cuda / "target.toml")) return std::nullopt;
  profile::ProfileOptions p;
  try {
    p.eval.target = load_target(cuda);
  } catch (const std::exception&) {
    return std::nullopt;  // the targets check reports a broken target
  }
  p.eval.problem = p.eval.target.example_reference;
  p.eval.candidate = p.eval.target.example_candidate;
  p.eval.device = "cuda";
  p.eval.python = python;
  p.eval.sandbox = true;
  p.eval.trials = 1;
  p.eval.compile_baseline = false;
  p.eval.log_dir = state_dir() / "doctor" / "ncu";
  p.reps = 3;
  p.profiler_reps = 1;
  p.ncu_calls = 1;
  p.ncu_timeout_s = 180;
  const std::string name = "ncu, sandboxed";
  try {
    const json doc = profile::run_profile(p);
    const json n = doc.value("ncu", json::object());
    if (n.value("status", "") == "ok")
      return DoctorCheck{name, CheckLevel::kOk, "profiled the cuda example's candidate inside its sandbox", ""};
    return DoctorCheck{name, CheckLevel::kWarn,
                       fmt::format("{} (logs: {})", n.value("note", std::string("no Nsight Compute metrics")), p.eval.log_dir.string()),
                       "see docs/profiling.md: the analysis agent then gets kforge's timing model only"};
  } catch (const std::exception& e) {
    return DoctorCheck{name, CheckLevel::kWarn, fmt::format("the profile failed: {}", e.what()),
                       "see docs/profiling.md"};
  }
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
                            {"readiness", readiness_label(t.readiness.state)}, {"reason", t.readiness.reason}});
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
    out += fmt::format("  {:<10} {:<15} {}\n", t.name, readiness_label(t.readiness.state), t.readiness.reason);
    if (t.readiness.state == ReadinessState::kRunnable) runnable.push_back(t.name);
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
  const json interpreter = probe_interpreter(in.python);
  for (auto& c : interpreter_checks(in.python, interpreter)) report.checks.push_back(std::move(c));
  for (auto& c : tool_checks(interpreter)) report.checks.push_back(std::move(c));
  if (auto c = ncu_sandbox_check(in.python, !interpreter.value("gpus", json::array()).empty())) report.checks.push_back(*c);
  report.checks.push_back(store_check(in.store));
  // Each target's [requires] table against this machine, as `kforge targets` shows it.
  const MachineProbe machine = this_machine(in.python, targets);
  for (const auto& t : targets) report.targets.push_back({t.name, t.device, assess_readiness(t, machine)});
  return report;
}

}  // namespace kforge

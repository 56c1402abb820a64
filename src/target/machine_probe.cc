#include "target/machine_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "util/subprocess.h"

namespace kforge {

namespace {

// Prints one line `KFORGE_PROBE {json}`; whatever else the interpreter prints (warnings) is ignored.
constexpr const char* kProbeScript = R"(
import importlib.util, json, sys
r = {"python": sys.version.split()[0], "executable": sys.executable, "modules": {}}
try:
    import torch
    r["torch"] = torch.__version__
    r["torch_cuda"] = torch.version.cuda
    r["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
except Exception as e:
    r["torch_error"] = f"{type(e).__name__}: {e}"
for m in sys.argv[1:]:
    try:
        r["modules"][m] = importlib.util.find_spec(m) is not None
    except Exception:
        r["modules"][m] = False
print("KFORGE_PROBE " + json.dumps(r))
)";

}  // namespace

std::string find_on_path(const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate.string();
  }
  return "";
}

MachineProbe probe_machine(const std::string& python, const std::vector<std::string>& modules,
                           const std::vector<std::string>& tools) {
  MachineProbe probe;
  for (const auto& t : tools)
    if (!find_on_path(t).empty()) probe.facts.tools.insert(t);

  std::vector<std::string> argv = {python, "-c", kProbeScript};
  argv.insert(argv.end(), modules.begin(), modules.end());
  CommandResult run = run_command(argv, std::chrono::seconds(180));
  const std::string marker = "KFORGE_PROBE ";
  auto at = run.output.find(marker);
  if (run.exit_code != 0 || at == std::string::npos) {
    std::string said = run.output.substr(0, 2000);
    probe.details["interpreter_error"] =
        run.exit_code == -1 && said.empty()
            ? fmt::format("{} did not start or did not answer within 180 s", python)
            : fmt::format("{} exited with {}{}{}", python, run.exit_code, said.empty() ? "" : ": ", said);
    probe.facts.torch_problem = probe.details["interpreter_error"].get<std::string>();
    return probe;
  }
  auto end = run.output.find('\n', at);
  try {
    probe.details = nlohmann::json::parse(run.output.substr(at + marker.size(), end == std::string::npos ? end : end - at - marker.size()));
  } catch (const nlohmann::json::exception& e) {
    probe.details = {{"interpreter_error", fmt::format("{} gave an unreadable answer: {}", python, e.what())}};
    probe.facts.torch_problem = probe.details["interpreter_error"].get<std::string>();
    return probe;
  }
  if (probe.details.contains("torch_error")) probe.facts.torch_problem = probe.details["torch_error"].get<std::string>();
  probe.facts.has_cuda_device = !probe.details.value("gpus", nlohmann::json::array()).empty();
  for (const auto& [name, importable] : probe.details["modules"].items())
    if (importable.get<bool>()) probe.facts.python_modules.insert(name);
  return probe;
}

}  // namespace kforge

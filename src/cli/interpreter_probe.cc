#include "cli/interpreter_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "util/paths.h"
#include "util/subprocess.h"

namespace kforge {

namespace {

// Prints one line `KFORGE_PROBE {json}`; whatever else the interpreter prints (warnings) is ignored.
constexpr const char* kProbeScript = R"(
import json, sys
r = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
    r["torch"] = torch.__version__
    r["torch_cuda"] = torch.version.cuda
    r["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
except Exception as e:
    r["torch_error"] = f"{type(e).__name__}: {e}"
if "torch" in r:  # the worker's own modules, with the packages they import (argv[1]: the worker's folder)
    sys.path.insert(0, sys.argv[1])
    try:
        import kforge_worker.roles.reference, kforge_worker.roles.candidate
    except Exception as e:
        r["worker_error"] = f"{type(e).__name__}: {e}"
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

nlohmann::json probe_interpreter(const std::string& python) {
  CommandResult run = run_command({python, "-c", kProbeScript, (data_dir() / "worker").string()}, std::chrono::seconds(180));
  const std::string marker = "KFORGE_PROBE ";
  auto at = run.output.find(marker);
  if (run.exit_code != 0 || at == std::string::npos) {
    std::string said = run.output.substr(0, 2000);
    return {{"interpreter_error",
             run.exit_code == -1 && said.empty()
                 ? fmt::format("{} did not start or did not answer within 180 s", python)
                 : fmt::format("{} exited with {}{}{}", python, run.exit_code, said.empty() ? "" : ": ", said)}};
  }
  auto end = run.output.find('\n', at);
  try {
    return nlohmann::json::parse(run.output.substr(at + marker.size(), end == std::string::npos ? end : end - at - marker.size()));
  } catch (const nlohmann::json::exception& e) {
    return {{"interpreter_error", fmt::format("{} gave an unreadable answer: {}", python, e.what())}};
  }
}

}  // namespace kforge

#include "util/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "util/environment.h"
#include "util/subprocess.h"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "unknown"
#endif

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::vector<std::string>& command_line() {
  static std::vector<std::string> argv;
  return argv;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// The value of the first "key: value" line of a file whose key starts with one of `keys`.
std::string field(const fs::path& file, std::initializer_list<const char*> keys) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    for (const char* key : keys)
      if (line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) return trim(line.substr(line.find(':') + 1));
  return "";
}

json gpus() {
  json out = json::array();
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs)
    if (auto model = field(d / "information", {"Model"}); !model.empty()) out.push_back(model);
  return out;
}

}  // namespace

const char* kforge_version() { return KFORGE_VERSION; }

void set_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

json provenance() {
  struct utsname u {};
  uname(&u);
  std::string cpu = field("/proc/cpuinfo", {"model name", "Processor", "cpu model"});
  return {{"kforge_version", kforge_version()},
          {"command_line", command_line()},
          {"host",
           {{"name", u.nodename},
            {"os", std::string(u.sysname) + " " + u.release},
            {"cpu", cpu.empty() ? std::string(u.machine) : cpu},
            {"cpus", available_cpus()},
            {"gpus", gpus()}}}};
}

json environment(const std::string& python) {
  static const char* kAsk =
      "import importlib.metadata as m, json, platform\n"
      "try:\n    torch = m.version('torch')\nexcept m.PackageNotFoundError:\n    torch = ''\n"
      "print(json.dumps({'python_version': platform.python_version(), 'torch': torch}))\n";
  json env = provenance();
  env["python"] = python;
  env["python_version"] = "";
  env["torch"] = "";
  auto r = run_command({python, "-I", "-c", kAsk}, std::chrono::seconds(30));
  if (r.exit_code == 0) {
    const std::string out = trim(r.output);  // merged with stderr: the answer is the last line
    json answer = json::parse(out.substr(out.rfind('\n') + 1), nullptr, false);
    if (answer.is_object()) env.update(answer);
  }
  return env;
}

}  // namespace kforge

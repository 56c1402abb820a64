#include "target/readiness.h"

#include <glob.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/program_path.h"
#include "util/subprocess.h"

namespace kforge {

namespace fs = std::filesystem;

const char* readiness_label(ReadinessState state) {
  switch (state) {
    case ReadinessState::kRunnable: return "runnable";
    case ReadinessState::kCompileOnly: return "compile-only";
    case ReadinessState::kNeedsHardware: return "needs hardware";
    case ReadinessState::kMissingSoftware: return "not installed";
  }
  return "?";
}

namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  return find_program(program, path ? path : "/usr/local/bin:/usr/bin:/bin").has_value();
}

std::string first_glob_match(const std::string& pattern) {
  glob_t g{};
  std::string found;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) found = g.gl_pathv[0];
  ::globfree(&g);
  return found;
}

// The modules among `modules` that `python` finds; empty when python cannot run at all.
std::set<std::string> python_modules_found(const std::string& python, const std::set<std::string>& modules) {
  if (modules.empty()) return {};
  std::vector<std::string> argv = {python, "-c",
                                   "import importlib.util, sys\n"
                                   "for m in sys.argv[1:]:\n"
                                   "    try:\n"
                                   "        ok = importlib.util.find_spec(m) is not None\n"
                                   "    except Exception:\n"
                                   "        ok = False\n"
                                   "    if ok:\n"
                                   "        print(m)\n"};
  argv.insert(argv.end(), modules.begin(), modules.end());
  auto result = run_command(argv, std::chrono::seconds(30));
  std::set<std::string> found;
  if (result.exit_code != 0) return found;
  std::stringstream lines(result.output);
  for (std::string line; std::getline(lines, line);)
    if (modules.count(line)) found.insert(line);
  return found;
}

}  // namespace

MachineProbe this_machine(const std::string& python, const std::vector<Target>& targets) {
  std::set<std::string> wanted;
  for (const auto& t : targets) wanted.insert(t.requirements.python.begin(), t.requirements.python.end());
  auto found = std::make_shared<std::set<std::string>>(python_modules_found(python, wanted));
  return {[found](const std::string& m) { return found->count(m) > 0; }, on_path, first_glob_match};
}

Readiness assess_readiness(const Target& target, const MachineProbe& probe) {
  const Requirements& r = target.requirements;
  std::vector<std::string> missing, found;
  for (const auto& m : r.python) (probe.has_python_module(m) ? found : missing).push_back("Python module " + m);
  for (const auto& c : r.commands) (probe.has_command(c) ? found : missing).push_back(c);
  for (const auto& f : r.files) {
    std::string match = probe.first_match(f);
    if (match.empty()) missing.push_back(f); else found.push_back(match);
  }
  std::string node;
  for (const auto& pattern : r.device_nodes)
    if (node.empty()) node = probe.first_match(pattern);
  const bool hardware = r.device_nodes.empty() || !node.empty();
  const std::string no_hardware =
      fmt::format("no {} here ({} absent)", r.hardware, fmt::join(r.device_nodes, ", "));

  Readiness out;
  if (!missing.empty()) {
    out.state = ReadinessState::kMissingSoftware;
    out.reason = fmt::format("missing: {}", fmt::join(missing, ", "));
    if (!hardware) out.reason += "; " + no_hardware;
  } else if (hardware) {
    out.state = ReadinessState::kRunnable;
    if (!node.empty()) found.insert(found.begin(), fmt::format("{} ({})", r.hardware, node));
    out.reason = found.empty() ? "needs nothing beyond kforge itself" : fmt::format("found {}", fmt::join(found, ", "));
  } else if (target.compile_only.mode != CompileOnlyMode::kNone) {
    out.state = ReadinessState::kCompileOnly;
    out.reason = no_hardware + (target.compile_only.mode == CompileOnlyMode::kBuild
                                    ? "; `kforge eval --compile-only` builds candidates without it"
                                    : "; `kforge eval --compile-only` checks candidates in an interpreter on the CPU");
  } else {
    out.state = ReadinessState::kNeedsHardware;
    out.reason = no_hardware;
  }
  if (out.state != ReadinessState::kRunnable && !r.note.empty()) out.reason += "; " + r.note;
  return out;
}

}  // namespace kforge

#include "util/sandbox.h"

#include <chrono>
#include <mutex>
#include <set>

#include "util/subprocess.h"

namespace kforge {

namespace fs = std::filesystem;

std::optional<std::string> usable_bwrap() {
  static std::once_flag once;
  static std::optional<std::string> found;
  std::call_once(once, [] {
    for (const char* path : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}) {
      if (!fs::exists(path)) continue;
      auto probe = run_command({path, "--unshare-pid", "--unshare-net", "--die-with-parent", "--ro-bind", "/",
                                "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"},
                               std::chrono::seconds(10));
      if (probe.exit_code == 0) found = path;
      return;
    }
  });
  return found;
}

std::vector<std::string> sandboxed_command(const std::string& bwrap, const SandboxPolicy& policy,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> argv = {bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                   "--ro-bind", "/", "/", "--proc", "/proc"};
  if (!policy.network) argv.push_back("--unshare-net");
  if (policy.devices) {
    argv.insert(argv.end(), {"--dev-bind", "/dev", "/dev"});
  } else {
    argv.insert(argv.end(), {"--dev", "/dev"});
  }
  argv.insert(argv.end(), {"--tmpfs", "/tmp"});
  std::set<std::string> seen;  // each mount point once
  auto mount = [&](const char* how, const std::string& source, const fs::path& target) {
    std::string where = fs::absolute(target).lexically_normal().string();
    if (seen.insert(where).second) argv.insert(argv.end(), {how, source, where});
  };
  for (const auto& dir : policy.hidden_dirs)
    if (fs::is_directory(dir)) {
      std::string where = fs::absolute(dir).lexically_normal().string();
      if (seen.insert(where).second) argv.insert(argv.end(), {"--tmpfs", where});
    }
  for (const auto& file : policy.hidden_files)
    if (fs::exists(file)) mount("--ro-bind", "/dev/null", file);
  // Bound where they really are: bwrap cannot mount onto a symlink (a virtualenv linked from
  // elsewhere), and the link itself stays visible through the root's bind.
  for (const auto& dir : policy.read_only)
    if (fs::exists(dir)) mount("--ro-bind", fs::canonical(dir).string(), fs::canonical(dir));
  for (const auto& dir : policy.writable)
    if (fs::exists(dir)) mount("--bind", fs::absolute(dir).string(), dir);
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace kforge

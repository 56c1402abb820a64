#include "util/sandbox.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "util/sandbox_limits.h"
#include "util/subprocess.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// The /etc entries the dynamic loader, the compilers (Debian's alternatives) and the OpenCL ICD
// loader read. Nothing else of /etc: no passwd, shadow, hosts or credentials.
const char* const kEtcEntries[] = {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                                   "/etc/OpenCL", nullptr};
// Top-level directories that are links into /usr on a merged-/usr system, or real directories.
const char* const kRootDirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", nullptr};

std::vector<std::string> base_view() {
  std::vector<std::string> argv = {"--ro-bind", "/usr", "/usr"};
  for (int i = 0; kRootDirs[i]; ++i) {
    std::error_code ec;
    fs::path p = kRootDirs[i];
    if (fs::is_symlink(p, ec)) {
      argv.insert(argv.end(), {"--symlink", fs::read_symlink(p, ec).string(), p.string()});
    } else if (fs::is_directory(p, ec)) {
      argv.insert(argv.end(), {"--ro-bind", p.string(), p.string()});
    }
  }
  argv.insert(argv.end(), {"--perms", "0755", "--dir", "/etc"});
  for (int i = 0; kEtcEntries[i]; ++i)
    if (fs::exists(kEtcEntries[i])) argv.insert(argv.end(), {"--ro-bind", kEtcEntries[i], kEtcEntries[i]});
  if (fs::is_directory("/sys")) argv.insert(argv.end(), {"--ro-bind", "/sys", "/sys"});
  return argv;
}

}  // namespace

std::vector<fs::path> sandbox_system_paths() {
  std::vector<fs::path> out = {"/usr"};
  for (int i = 0; kRootDirs[i]; ++i)
    if (fs::exists(kRootDirs[i])) out.emplace_back(kRootDirs[i]);
  for (int i = 0; kEtcEntries[i]; ++i)
    if (fs::exists(kEtcEntries[i])) out.emplace_back(kEtcEntries[i]);
  out.emplace_back("/sys");
  out.emplace_back("/proc");
  return out;
}

std::optional<std::string> usable_bwrap() {
  static std::once_flag once;
  static std::optional<std::string> found;
  std::call_once(once, [] {
    for (const char* path : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}) {
      if (!fs::exists(path)) continue;
      SandboxPolicy probe;
      probe.tmp_bytes = probe.shm_bytes = 1 << 20;
      probe.drop_to = sandbox_ids(std::nullopt);
      // A loaded machine can make one probe fail or time out (a Ray node then refused every
      // evaluation of a bench); bubblewrap is unusable only when three in a row fail.
      for (int attempt = 0; attempt < 3 && !found; ++attempt) {
        auto r = run_command(sandboxed_command(path, probe, {"/bin/true"}), std::chrono::seconds(30));
        if (r.exit_code == 0) found = path;
      }
      return;
    }
  });
  return found;
}

std::vector<std::string> sandboxed_command(const std::string& bwrap, const SandboxPolicy& policy,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> argv = {bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                   "--unshare-cgroup-try", "--new-session"};
  if (!policy.drop_to && geteuid() != 0) argv.push_back("--unshare-user");
  if (!policy.network) argv.push_back("--unshare-net");
  auto base = base_view();
  argv.insert(argv.end(), base.begin(), base.end());
  argv.insert(argv.end(), {"--proc", "/proc", "--dev", "/dev"});
  for (const auto& node : policy.devices)
    if (fs::exists(node)) argv.insert(argv.end(), {"--dev-bind", node.string(), node.string()});
  // /dev itself is read-only; /dev/shm and /tmp are the only writable places of the sandbox's own,
  // each a tmpfs of a fixed size.
  // Made by bubblewrap as root when it drops to another uid afterwards: writable for all, sticky.
  const std::string perms = policy.drop_to ? "01777" : "0755";
  argv.insert(argv.end(), {"--perms", perms, "--size", std::to_string(policy.shm_bytes), "--tmpfs", "/dev/shm",
                           "--remount-ro", "/dev"});
  argv.insert(argv.end(), {"--perms", perms, "--size", std::to_string(policy.tmp_bytes), "--tmpfs", "/tmp"});
  // Folders bubblewrap makes on the way to a mount point are private to root (0700) when it runs as
  // root: make them passable first. Folders inside a bound host folder are the host's, left alone.
  std::vector<fs::path> bound = {"/usr", "/sys", "/proc", "/dev"};
  std::set<std::string> made = {"/", "/tmp", "/etc"};
  auto inside_bound = [&](const fs::path& p) {
    for (const auto& b : bound) {
      auto rel = p.lexically_relative(b);
      if (!rel.empty() && *rel.begin() != "..") return true;
    }
    return false;
  };
  auto mount = [&](const char* how, const fs::path& real) {
    if (!made.insert(real.string()).second) return;  // each mount point once
    std::vector<fs::path> parents;
    for (fs::path p = real.parent_path(); p != p.root_path() && !p.empty(); p = p.parent_path()) parents.push_back(p);
    for (auto it = parents.rbegin(); it != parents.rend(); ++it)
      if (!inside_bound(*it) && made.insert(it->string()).second)
        argv.insert(argv.end(), {"--perms", "0755", "--dir", it->string()});
    argv.insert(argv.end(), {how, real.string(), real.string()});
    bound.push_back(real);
  };
  // Bound where they really are: bwrap cannot mount onto a symlink (a virtualenv linked from elsewhere).
  for (const auto& dir : policy.read_only) {
    std::error_code ec;
    fs::path real = fs::canonical(dir, ec);
    if (!ec) mount("--ro-bind", real);
  }
  for (const auto& dir : policy.writable) {
    std::error_code ec;
    fs::path real = fs::canonical(dir, ec);
    if (!ec) mount("--bind", real);
  }
  argv.insert(argv.end(), {"--remount-ro", "/", "--"});
  if (policy.drop_to) {
    // As root inside, before dropping to the sandbox's uid (sandbox_limits.h): bubblewrap cannot set a
    // tmpfs's inode count, so the two are remounted with one; and the tasks of the sandbox's uid are
    // limited (RLIMIT_NPROC, enforced once setpriv has dropped to it).
    argv.insert(argv.end(), {"/bin/sh", "-c",
                             fmt::format("mount -o remount,nr_inodes={0} /tmp && mount -o remount,nr_inodes={0} "
                                         "/dev/shm && exec \"$@\"",
                                         kSandboxInodes),
                             "sh", "/usr/bin/prlimit", fmt::format("--nproc={0}:{0}", kSandboxTasks), "--"});
    argv.insert(argv.end(), {"/usr/bin/setpriv", fmt::format("--reuid={}", policy.drop_to->first),
                             fmt::format("--regid={}", policy.drop_to->second), "--clear-groups", "--inh-caps=-all",
                             "--bounding-set=-all", "--"});
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::optional<HostIds> sandbox_ids(std::optional<uid_t> configured) {
  if (geteuid() != 0) return std::nullopt;
  uid_t uid = configured.value_or(65534);
  return HostIds{uid, uid};
}

std::optional<TmpUsage> sandbox_tmp_usage(pid_t sandbox_pid) {
  // bubblewrap's first child is the sandbox's PID 1; every process inside sees the same /tmp.
  std::ifstream children(fmt::format("/proc/{}/task/{}/children", sandbox_pid, sandbox_pid));
  pid_t inside = 0;
  if (!(children >> inside) || inside <= 0) return std::nullopt;
  struct statvfs st {};
  if (statvfs(fmt::format("/proc/{}/root/tmp", inside).c_str(), &st) != 0) return std::nullopt;
  TmpUsage usage;
  usage.size_bytes = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
  usage.used_bytes = static_cast<std::uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize;
  return usage;
}

}  // namespace kforge

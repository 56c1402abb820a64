#include "util/memory_cgroup.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/oom_kills.h"

namespace kforge {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// Where this process's cgroup is in a hierarchy: "0::/path" (v2) or "N:memory:/path" (v1) in
// /proc/self/cgroup, below the mount point of that hierarchy.
struct Hierarchy {
  fs::path own;  // this process's cgroup folder
  bool v2 = false;
};

std::optional<fs::path> mount_of(const std::string& type, const std::string& option) {
  auto mounts = read_text("/proc/self/mounts");
  if (!mounts) return std::nullopt;
  std::istringstream lines(*mounts);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string device, where, fstype, options;
    f >> device >> where >> fstype >> options;
    if (fstype != type) continue;
    if (option.empty() || ("," + options + ",").find("," + option + ",") != std::string::npos) return fs::path(where);
  }
  return std::nullopt;
}

std::optional<Hierarchy> find_hierarchy(std::string* why) {
  auto self = read_text("/proc/self/cgroup");
  if (!self) {
    *why = "/proc/self/cgroup cannot be read";
    return std::nullopt;
  }
  std::string v2_path, v1_path;
  bool has_v1 = false;
  std::istringstream lines(*self);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (controllers.find(",memory,") != std::string::npos) {
      v1_path = line.substr(b + 1);
      has_v1 = true;
    }
  }
  if (has_v1) {
    if (auto mount = mount_of("cgroup", "memory")) {
      fs::path own = *mount / fs::path(v1_path).relative_path();
      // A container shows its own cgroup as the mount's root.
      if (!fs::is_directory(own)) own = *mount;
      return Hierarchy{own, false};
    }
  }
  if (auto mount = mount_of("cgroup2", "")) {
    fs::path own = *mount / fs::path(v2_path).relative_path();
    if (!fs::is_directory(own)) own = *mount;
    auto enabled = read_text(own / "cgroup.subtree_control");
    if (!enabled || (" " + *enabled).find(" memory") == std::string::npos) {
      *why = fmt::format("cgroup v2 without the memory controller enabled for the children of {}", own.string());
      return std::nullopt;
    }
    return Hierarchy{own, true};
  }
  *why = "no cgroup hierarchy with the memory controller is mounted";
  return std::nullopt;
}

std::atomic<unsigned> g_serial{0};

}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(std::uint64_t limit_bytes, std::string* why) {
  std::string reason;
  auto h = find_hierarchy(&reason);
  if (!h) {
    if (why) *why = reason;
    return nullptr;
  }
  std::unique_ptr<MemoryCgroup> cg(new MemoryCgroup());
  cg->v2_ = h->v2;
  cg->limit_ = limit_bytes;
  cg->dir_ = h->own / fmt::format("kforge-{}-{}", getpid(), g_serial++);
  std::error_code ec;
  if (!fs::create_directory(cg->dir_, ec)) {
    if (why) *why = fmt::format("cannot make {}: {}", cg->dir_.string(), ec ? ec.message() : "it exists");
    return nullptr;
  }
  const std::string limit = std::to_string(limit_bytes);
  const bool limited = h->v2 ? write_text(cg->dir_ / "memory.max", limit) && write_text(cg->dir_ / "memory.swap.max", "0")
                             : write_text(cg->dir_ / "memory.limit_in_bytes", limit) &&
                                   (!fs::exists(cg->dir_ / "memory.memsw.limit_in_bytes") ||  // swap counts too
                                    write_text(cg->dir_ / "memory.memsw.limit_in_bytes", limit));
  if (!limited) {
    if (why) *why = fmt::format("cannot set the memory limit of {}", cg->dir_.string());
    ::rmdir(cg->dir_.c_str());
    return nullptr;
  }
  cg->procs_file_ = (cg->dir_ / "cgroup.procs").string();
  return cg;
}

MemoryCgroup::~MemoryCgroup() {
  // The tree was killed and reaped before; a process still exiting keeps the folder busy briefly.
  for (int attempt = 0; attempt < 50 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++attempt) usleep(20000);
}

std::int64_t MemoryCgroup::oom_kills() const {
  auto text = read_text(dir_ / (v2_ ? "memory.events" : "memory.oom_control"));
  if (!text) return 0;
  return counter_in(*text, "oom_kill").value_or(0);
}

std::optional<std::uint64_t> MemoryCgroup::peak_bytes() const {
  auto text = read_text(dir_ / (v2_ ? "memory.peak" : "memory.max_usage_in_bytes"));
  if (!text) return std::nullopt;
  try {
    return std::stoull(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> memory_cgroups_unavailable() {
  std::string why;
  auto cg = MemoryCgroup::create(64ull << 20, &why);
  if (!cg) return why;
  return std::nullopt;
}

}  // namespace kforge

#include "util/memory_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/oom_kills.h"

namespace kforge {
namespace {

bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::optional<std::string> read_small(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Removes the cgroups of kforge processes that are gone (a killed run leaves its empty cgroups):
// "kforge-cand-PID-N" whose PID no longer exists. A cgroup still holding processes is not removed.
void remove_stale(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("kforge-cand-", 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + 12, nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::rmdir((parent + "/" + name).c_str());
  }
  ::closedir(dir);
}

}  // namespace

std::optional<std::pair<std::string, bool>> own_memory_cgroup() {
  auto text = read_small("/proc/self/cgroup");
  if (!text) return std::nullopt;
  std::optional<std::pair<std::string, bool>> v2;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    // "ID:controllers:path"; v1's memory hierarchy first: where it is mounted, v2 holds no memory controller.
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');)
      if (c == "memory") return std::make_pair("/sys/fs/cgroup/memory" + path, false);
    if (line.rfind("0::", 0) == 0) v2 = std::make_pair("/sys/fs/cgroup" + path, true);
  }
  return v2;
}

MemoryCgroup::MemoryCgroup(std::string dir, bool v2, std::uint64_t limit)
    : dir_(std::move(dir)), procs_(dir_ + "/cgroup.procs"), v2_(v2), limit_(limit) {}

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(const std::string& name, std::uint64_t limit_bytes) {
  auto own = own_memory_cgroup();
  if (!own || limit_bytes == 0) return nullptr;
  remove_stale(own->first);
  const std::string dir = own->first + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return nullptr;
  std::unique_ptr<MemoryCgroup> group(new MemoryCgroup(dir, own->second, limit_bytes));
  const std::string limit = std::to_string(limit_bytes);
  // v2: memory.max (and no swap beside it); v1: memory.limit_in_bytes. A folder without the file has
  // no memory controller (v2's parent does not delegate it): no limit, so none is made.
  const bool limited = own->second ? write_file(dir + "/memory.max", limit) : write_file(dir + "/memory.limit_in_bytes", limit);
  if (!limited) return nullptr;  // the destructor removes the folder
  if (own->second) write_file(dir + "/memory.swap.max", "0");
  return group;
}

MemoryCgroup::~MemoryCgroup() {
  // A cgroup is removed once its last process is gone; a killed tree can take a moment to be reaped.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool MemoryCgroup::limit_reached() const {
  if (v2_) {
    auto events = read_small(dir_ + "/memory.events");
    if (!events) return false;
    auto max = counter_in(*events, "max");
    auto kills = counter_in(*events, "oom_kill");
    return (max && *max > 0) || (kills && *kills > 0);
  }
  auto failcnt = read_small(dir_ + "/memory.failcnt");
  return failcnt && std::strtoll(failcnt->c_str(), nullptr, 10) > 0;
}

}  // namespace kforge

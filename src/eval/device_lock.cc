#include "eval/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

namespace fs = std::filesystem;

std::string device_lock_name(const std::string& device, const DeviceLockSpec& spec, const char* visible_devices) {
  if (!spec.exclusive) return "";
  const auto colon = device.find(':');
  const std::string kind = device.substr(0, colon);
  int index = 0;
  if (colon != std::string::npos) index = std::stoi(device.substr(colon + 1));
  std::string id = std::to_string(index);
  if (visible_devices && *visible_devices) {
    // The runtime numbers the visible devices from 0; the lock must name the physical device.
    std::vector<std::string> entries;
    std::stringstream ss(visible_devices);
    for (std::string e; std::getline(ss, e, ',');) entries.push_back(e);
    if (index >= 0 && index < static_cast<int>(entries.size())) id = entries[static_cast<std::size_t>(index)];
  }
  std::string name;
  for (char c : kind + "-" + id) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return name;
}

namespace {

struct Opened {
  int fd;
  fs::path path;
};

std::optional<Opened> open_lock(const std::string& device, const DeviceLockSpec& spec, const fs::path& lock_dir) {
  const char* visible = spec.visible_devices_env.empty() ? nullptr : std::getenv(spec.visible_devices_env.c_str());
  std::string name = device_lock_name(device, spec, visible);
  if (name.empty()) return std::nullopt;
  fs::create_directories(lock_dir);
  fs::path path = lock_dir / (name + ".lock");
  // O_CLOEXEC: worker processes started later must not inherit (and so extend) the lock.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw InternalError(fmt::format("cannot open GPU lock {}: {}", path.string(), std::strerror(errno)));
  return Opened{fd, path};
}

void note_holder(int fd) {
  // For whoever inspects a waiting lock: the holder's pid.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
}

}  // namespace

std::optional<DeviceLock> DeviceLock::try_acquire(const std::string& device, const DeviceLockSpec& spec,
                                                  const fs::path& lock_dir) {
  auto opened = open_lock(device, spec, lock_dir);
  if (!opened) return std::nullopt;
  if (::flock(opened->fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(opened->fd);
    return std::nullopt;
  }
  note_holder(opened->fd);
  return DeviceLock(opened->fd, opened->path, 0);
}

std::optional<DeviceLock> DeviceLock::acquire(const std::string& device, const DeviceLockSpec& spec,
                                              const fs::path& lock_dir,
                                              const std::function<void(const fs::path&)>& on_wait) {
  auto opened = open_lock(device, spec, lock_dir);
  if (!opened) return std::nullopt;
  auto start = std::chrono::steady_clock::now();
  if (::flock(opened->fd, LOCK_EX | LOCK_NB) != 0) {
    if (on_wait) on_wait(opened->path);
    while (::flock(opened->fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(opened->fd);
      throw InternalError(fmt::format("cannot lock {}: {}", opened->path.string(), std::strerror(err)));
    }
  }
  note_holder(opened->fd);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return DeviceLock(opened->fd, opened->path, waited);
}

DeviceLock::DeviceLock(DeviceLock&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), waited_s_(other.waited_s_) {
  other.fd_ = -1;
}

DeviceLock& DeviceLock::operator=(DeviceLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    waited_s_ = other.waited_s_;
    other.fd_ = -1;
  }
  return *this;
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace kforge

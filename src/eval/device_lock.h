// One timing measurement per device at a time, across processes, for targets whose [device_lock]
// says so: an flock on <state_dir>/locks/<kind>-<N>.lock (cuda-0.lock) held only while kforge times
// on that device, so builds and correctness trials of other evaluations go on in parallel. The kernel
// drops the lock when the holder dies, so a crashed or killed kforge never leaves a device locked.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "target/target.h"

namespace kforge {

// The lock's name for a device "<kind>[:<index>]": "<kind>-<physical index>" ("cuda:1" with
// CUDA_VISIBLE_DEVICES=2,3 is "cuda-3"; a UUID entry is used as is), the index mapped through
// `visible_devices` (the value of spec.visible_devices_env); empty when the spec is not exclusive.
std::string device_lock_name(const std::string& device, const DeviceLockSpec& spec, const char* visible_devices);

class DeviceLock {
 public:
  // Takes the lock `lock_dir`/<name>.lock, waiting as long as another process holds it; `on_wait`
  // is called once, before waiting, with the lock's path. nullopt when the device needs no lock.
  static std::optional<DeviceLock> acquire(const std::string& device, const DeviceLockSpec& spec,
                                           const std::filesystem::path& lock_dir,
                                           const std::function<void(const std::filesystem::path&)>& on_wait = {});
  // Takes the lock only if it is free now.
  static std::optional<DeviceLock> try_acquire(const std::string& device, const DeviceLockSpec& spec,
                                               const std::filesystem::path& lock_dir);

  DeviceLock(DeviceLock&& other) noexcept;
  DeviceLock& operator=(DeviceLock&& other) noexcept;
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  ~DeviceLock();

  const std::filesystem::path& path() const { return path_; }
  double waited_seconds() const { return waited_s_; }

 private:
  DeviceLock(int fd, std::filesystem::path path, double waited_s) : fd_(fd), path_(std::move(path)), waited_s_(waited_s) {}
  int fd_ = -1;
  std::filesystem::path path_;
  double waited_s_ = 0;
};

}  // namespace kforge

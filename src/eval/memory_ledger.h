// The memory reservations of one device, shared by every kforge process on this host that uses the
// same state directory: <state_dir>/locks/<device>.memory, a JSON file read and rewritten under an
// flock. A reservation waits in line until memory_admission.h lets it start, and is removed when
// its evaluation ends; one whose kforge process is gone (a crash, a kill -9) is dropped by the next
// reader. The file also keeps the device's free memory as measured while nothing of kforge's ran
// on it: the budget is taken from that, since memory in use by running evaluations is theirs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "target/target.h"

namespace kforge {

// The ledger file of `device` ("cpu", "cuda:1") under `lock_dir`: named after the physical device,
// as the timing lock is (device_lock.h), so processes with different CUDA_VISIBLE_DEVICES agree.
std::filesystem::path memory_ledger_path(const std::string& device, const DeviceLockSpec& spec,
                                         const std::filesystem::path& lock_dir);

struct MemoryRequest {
  std::uint64_t bytes = 0;                 // the evaluation's estimate
  bool alone = false;                      // it must have the device to itself
  std::uint64_t free_bytes = 0;            // the device's free memory, measured just before
  std::optional<std::uint64_t> cap_bytes;  // [memory] device_gb
};

// One started reservation; removed from the ledger by release() or the destructor.
class MemoryTicket {
 public:
  MemoryTicket(MemoryTicket&& other) noexcept;
  MemoryTicket& operator=(MemoryTicket&&) = delete;
  MemoryTicket(const MemoryTicket&) = delete;
  ~MemoryTicket();

  // Removes the reservation; true when another evaluation held memory on the device at any time
  // while this one ran (an out-of-memory may then be theirs as much as this one's).
  bool release();

  std::uint64_t budget_bytes() const { return budget_; }
  double waited_seconds() const { return waited_s_; }
  bool alone() const { return alone_; }
  double started_at() const { return started_at_; }  // seconds since the epoch

 private:
  friend MemoryTicket reserve_memory(const std::filesystem::path&, const MemoryRequest&,
                                     const std::function<void(const std::string&)>&);
  MemoryTicket(std::filesystem::path path, std::uint64_t ticket) : path_(std::move(path)), ticket_(ticket) {}
  std::filesystem::path path_;
  std::uint64_t ticket_ = 0;
  std::uint64_t budget_ = 0;
  double waited_s_ = 0;
  double started_at_ = 0;
  bool alone_ = false;
  bool company_at_start_ = false;    // others ran when it started
  std::uint64_t starts_before_ = 0;  // reservations started on the device before this one
  bool released_ = false;
};

// Joins the line of the ledger at `path` and waits until the request may start. `on_wait` is called
// once, if it has to wait, with why ("needs 3.2 GiB; 5.1 of 7.2 GiB held by 2 evaluations").
MemoryTicket reserve_memory(const std::filesystem::path& path, const MemoryRequest& request,
                            const std::function<void(const std::string&)>& on_wait = {});

// "512 B", "3.0 KiB", "1.25 GiB".
std::string format_bytes(std::uint64_t bytes);

}  // namespace kforge

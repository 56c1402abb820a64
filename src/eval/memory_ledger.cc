#include "eval/memory_ledger.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "eval/device_lock.h"
#include "eval/memory_admission.h"
#include "util/errors.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// How often a waiting reservation looks again. Evaluations last seconds to minutes.
constexpr auto kPollInterval = std::chrono::milliseconds(200);

bool process_running(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

double now_epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

MemoryReservation from_json(const json& j) {
  return {j.value("pid", 0L), j.value("ticket", std::uint64_t{0}), j.value("bytes", std::uint64_t{0}),
          j.value("alone", false), j.value("running", false)};
}

json to_json(const MemoryReservation& r) {
  return {{"pid", r.pid}, {"ticket", r.ticket}, {"bytes", r.bytes}, {"alone", r.alone}, {"running", r.running}};
}

// Runs `change` on the ledger's contents under its flock and writes back what it leaves. Reservations
// of processes that are gone are dropped first.
template <typename Change>
void with_ledger(const fs::path& path, Change change) {
  fs::create_directories(path.parent_path());
  // O_CLOEXEC: worker processes started while it is open must not inherit it.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw InternalError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // also releases the flock
  } closer{fd};
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) throw InternalError(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)));
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0;) text.append(buf, n);
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) doc = json::object();  // new, or cut short by a crash mid-write: start afresh
  json kept = json::array();
  for (const auto& r : doc.value("reservations", json::array()))
    if (r.is_object() && process_running(r.value("pid", 0L))) kept.push_back(r);
  doc["reservations"] = kept;
  change(doc);
  const std::string out = doc.dump() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size()))
    throw InternalError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

std::vector<MemoryReservation> reservations(const json& doc) {
  std::vector<MemoryReservation> out;
  for (const auto& r : doc["reservations"]) out.push_back(from_json(r));
  return out;
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : 1, units[u]);
}

fs::path memory_ledger_path(const std::string& device, const DeviceLockSpec& spec, const fs::path& lock_dir) {
  const char* visible = spec.visible_devices_env.empty() ? nullptr : std::getenv(spec.visible_devices_env.c_str());
  return lock_dir / (device_lock_name(device, {true, spec.visible_devices_env}, visible) + ".memory");
}

MemoryTicket::MemoryTicket(MemoryTicket&& o) noexcept
    : path_(std::move(o.path_)),
      ticket_(o.ticket_),
      budget_(o.budget_),
      waited_s_(o.waited_s_),
      started_at_(o.started_at_),
      alone_(o.alone_),
      company_at_start_(o.company_at_start_),
      starts_before_(o.starts_before_),
      released_(o.released_) {
  o.released_ = true;
}

MemoryTicket::~MemoryTicket() {
  try {
    release();
  } catch (...) {  // a ledger that cannot be written: the reservation goes with this process
  }
}

bool MemoryTicket::release() {
  if (released_) return false;
  released_ = true;
  bool company = company_at_start_;
  with_ledger(path_, [&](json& doc) {
    company = company || doc.value("starts", std::uint64_t{0}) > starts_before_ + 1;
    json kept = json::array();
    for (const auto& r : doc["reservations"])
      if (!(r.value("pid", 0L) == ::getpid() && r.value("ticket", std::uint64_t{0}) == ticket_)) kept.push_back(r);
    doc["reservations"] = kept;
  });
  return company;
}

MemoryTicket reserve_memory(const fs::path& path, const MemoryRequest& request,
                            const std::function<void(const std::string&)>& on_wait) {
  const auto start = std::chrono::steady_clock::now();
  MemoryReservation me{::getpid(), 0, request.bytes, request.alone, false};
  with_ledger(path, [&](json& doc) {
    me.ticket = doc.value("next_ticket", std::uint64_t{1});
    doc["next_ticket"] = me.ticket + 1;
    doc["reservations"].push_back(to_json(me));
  });
  MemoryTicket ticket(path, me.ticket);  // from here on, leaving by an exception removes the reservation
  bool started = false, told = false;
  while (!started) {
    std::string why;
    with_ledger(path, [&](json& doc) {
      auto all = reservations(doc);
      bool others_run = false, listed = false;
      for (const auto& r : all) {
        others_run = others_run || (r.running && r.ticket != me.ticket);
        listed = listed || r.ticket == me.ticket;
      }
      if (!listed) doc["reservations"].push_back(to_json(me));  // removed by hand: take a place again
      // Measured while nothing of kforge's holds the device, a free figure is what evaluations can share.
      if (!others_run || !doc.contains("free_bytes")) doc["free_bytes"] = request.free_bytes;
      const std::uint64_t budget = memory_budget(doc["free_bytes"].get<std::uint64_t>(), request.cap_bytes);
      if (may_start(all, me, budget)) {
        started = true;
        ticket.budget_ = budget;
        ticket.alone_ = runs_alone(me, budget);
        ticket.company_at_start_ = others_run;
        ticket.starts_before_ = doc.value("starts", std::uint64_t{0});
        doc["starts"] = ticket.starts_before_ + 1;
        for (auto& r : doc["reservations"])
          if (r.value("pid", 0L) == me.pid && r.value("ticket", std::uint64_t{0}) == me.ticket)
            r["running"] = true, r["alone"] = ticket.alone_;
        return;
      }
      std::uint64_t held = 0;
      int running = 0, waiting_before = 0;
      for (const auto& r : all) {
        if (r.ticket == me.ticket) continue;
        if (r.running)
          held += r.bytes, ++running;
        else if (r.ticket < me.ticket)
          ++waiting_before;
      }
      // An evaluation larger than the budget runs with the device to itself: "X of a smaller Y" misleads.
      const std::string holding =
          held > budget ? fmt::format("{} held by {} evaluation(s), more than the {} budget: one runs alone",
                                      format_bytes(held), running, format_bytes(budget))
                        : fmt::format("{} of {} held by {} evaluation(s)", format_bytes(held), format_bytes(budget), running);
      why = fmt::format("needs {}{}; {}{}", format_bytes(me.bytes), runs_alone(me, budget) ? " and the device alone" : "",
                        holding, waiting_before ? fmt::format(", {} waiting before it", waiting_before) : "");
    });
    if (started) break;
    if (!told && on_wait) on_wait(why);
    told = true;
    std::this_thread::sleep_for(kPollInterval);
  }
  ticket.waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ticket.started_at_ = now_epoch_seconds();
  return ticket;
}

}  // namespace kforge

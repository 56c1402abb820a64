#include "util/oom_kills.h"

#include <charconv>
#include <sstream>
#include <string>

#include "util/errors.h"
#include "util/files.h"

namespace kforge {
namespace {

// A kernel file's text, or nullopt where it cannot be read (no cgroup v2, a restricted /proc).
std::optional<std::string> read_text(const std::string& path) {
  try {
    return read_file(path);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// This process's cgroup v2 folder ("0::/path" in /proc/self/cgroup), or nullopt under cgroup v1.
std::optional<std::string> own_cgroup() {
  auto text = read_text("/proc/self/cgroup");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> counter_in(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      std::int64_t value = 0;
      std::string_view digits = line.substr(key.size() + 1);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec == std::errc{} && ptr == digits.data() + digits.size()) return value;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> oom_kill_count() {
  if (auto cgroup = own_cgroup())
    if (auto events = read_text(*cgroup + "/memory.events"))
      if (auto kills = counter_in(*events, "oom_kill")) return kills;
  if (auto vmstat = read_text("/proc/vmstat")) return counter_in(*vmstat, "oom_kill");
  return std::nullopt;
}

}  // namespace kforge

#include "agent/source_diff.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/paths.h"
#include "util/subprocess.h"

namespace kforge::agent {

namespace fs = std::filesystem;

std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_name,
                         const std::string& after_name, std::size_t max_lines) {
  if (before == after) return "";
  const fs::path dir = make_temp_dir("kforge-diff-");
  std::ofstream(dir / "a") << before;
  std::ofstream(dir / "b") << after;
  CommandResult r = run_command({"diff", "-u", "--label", before_name, "--label", after_name, (dir / "a").string(),
                                 (dir / "b").string()},
                                std::chrono::seconds(30));
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (r.exit_code != 1) return fmt::format("(no diff: `diff -u` ended with code {})", r.exit_code);
  std::istringstream in(r.output);
  std::string out, line;
  std::size_t n = 0, total = 0;
  while (std::getline(in, line)) {
    ++total;
    if (n < max_lines) {
      out += line + "\n";
      ++n;
    }
  }
  if (total > n) out += fmt::format("... ({} more diff lines)\n", total - n);
  return out;
}

}  // namespace kforge::agent

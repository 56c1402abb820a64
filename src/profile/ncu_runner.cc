#include "profile/ncu_runner.h"

#include <cstdlib>

#include <fmt/format.h>

#include "util/subprocess.h"

namespace kforge::profile {

namespace fs = std::filesystem;

constexpr std::uint64_t kMaxPageBytes = 256ull << 20;

const char* const kNcuSections[] = {"SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy",
                                    "LaunchStats", "WarpStateStats", "SchedulerStats", nullptr};

std::optional<fs::path> find_ncu(const std::string& requested) {
  if (requested == "off") return std::nullopt;
  if (!requested.empty()) return fs::exists(requested) ? std::optional<fs::path>(requested) : std::nullopt;
  if (const char* env = std::getenv("NCU"); env && *env && fs::exists(env)) return fs::path(env);
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      auto colon = rest.find(':');
      dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  dirs.emplace_back("/usr/local/cuda/bin");
  std::error_code ec;
  if (fs::is_directory("/opt/nvidia/nsight-compute", ec))
    for (const auto& entry : fs::directory_iterator("/opt/nvidia/nsight-compute", ec)) dirs.push_back(entry.path());
  for (const auto& d : dirs)
    if (fs::path candidate = d / "ncu"; fs::is_regular_file(candidate, ec)) return candidate;
  return std::nullopt;
}

std::string ncu_missing_note(const std::string& requested) {
  if (requested == "off") return "Nsight Compute not run (--ncu off)";
  if (!requested.empty()) return fmt::format("Nsight Compute not found at {}", requested);
  return "Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or /opt/nvidia/nsight-compute; give it "
         "with --ncu PATH";
}

std::string ncu_version(const fs::path& ncu) {
  auto r = run_command({ncu.string(), "--version"}, std::chrono::seconds(30));
  if (r.exit_code != 0) return "";
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  auto nl = out.rfind('\n');
  return nl == std::string::npos ? out : out.substr(nl + 1);
}

std::vector<std::string> ncu_wrapper(const fs::path& ncu, const fs::path& report) {
  // --clock-control none: the GPU's clocks as the timer sees them, not ncu's base clocks.
  std::vector<std::string> argv = {ncu.string(), "--clock-control", "none", "--profile-from-start", "off",
                                   "--export", report.string(), "--force-overwrite"};
  for (int i = 0; kNcuSections[i]; ++i) {
    argv.push_back("--section");
    argv.push_back(kNcuSections[i]);
  }
  return argv;
}

NcuExport export_ncu_report(const fs::path& ncu, const fs::path& report) {
  NcuExport out;
  if (!fs::exists(report)) {
    out.error = fmt::format("no report was written ({})", report.string());
    return out;
  }
  auto page = [&](const char* name, std::vector<std::string> extra) {
    std::vector<std::string> argv = {ncu.string(), "--import", report.string(), "--csv", "--page", name,
                                     "--print-units", "base"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    // Whole: a page of a model's many launches runs to megabytes, and an excerpt is no CSV.
    return run_command_whole(argv, std::chrono::seconds(120), kMaxPageBytes);
  };
  auto details = page("details", {"--print-rule-details"});
  if (details.exit_code != 0) details = page("details", {});  // versions before the rule-details option
  if (details.exit_code != 0) {
    out.error = fmt::format("ncu --import failed (exit {}): {}", details.exit_code, details.output.substr(0, 500));
    return out;
  }
  if (details.output_cut) {
    out.error = fmt::format("ncu --import: the details page is larger than {} MiB", kMaxPageBytes >> 20);
    return out;
  }
  out.details = details.output;
  if (auto raw = page("raw", {}); raw.exit_code == 0 && !raw.output_cut) out.raw = raw.output;
  return out;
}

std::string diagnose_ncu_output(const std::string& output) {
  if (output.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root or allow "
           "profiling for all users (NVreg_RestrictProfilingToAdminUsers=0)";
  if (output.find("No kernels were profiled") != std::string::npos)
    return "ncu profiled no kernels (none ran inside the profiled range)";
  for (const char* marker : {"==ERROR==", "==PROF== Error"})
    if (auto pos = output.find(marker); pos != std::string::npos) {
      auto end = output.find('\n', pos);
      return "ncu: " + output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    }
  return "";
}

}  // namespace kforge::profile

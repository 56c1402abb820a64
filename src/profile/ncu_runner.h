// Running Nsight Compute around a worker: where ncu is, the command line a worker runs under, and
// reading the report it leaves behind back as CSV (docs/profiling.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kforge::profile {

// The sections collected for each kernel.
extern const char* const kNcuSections[];

// `requested` when given ("off" disables), else $NCU, else `ncu` on PATH, /usr/local/cuda/bin,
// /opt/nvidia/nsight-compute/<version>/. nullopt when none is found (or "off").
std::optional<std::filesystem::path> find_ncu(const std::string& requested);

// What the profile says when `find_ncu(requested)` found nothing.
std::string ncu_missing_note(const std::string& requested);

// `ncu --version`'s last line ("Version 2025.1.0.0 (build ...)"), empty when it does not run.
std::string ncu_version(const std::filesystem::path& ncu);

// The prefix that profiles a worker's kernels inside cudaProfilerStart/Stop ranges into
// `report` (.ncu-rep), clocks left as they are.
std::vector<std::string> ncu_wrapper(const std::filesystem::path& ncu, const std::filesystem::path& report);

struct NcuExport {
  std::string details, raw;  // CSV text of the two pages
  std::string error;         // why there is none
};

// Reads a report back as CSV: the details page (with rule details) and the raw page, base units.
NcuExport export_ncu_report(const std::filesystem::path& ncu, const std::filesystem::path& report);

// Why ncu produced no report, from the wrapped worker's output (permission, unsupported GPU, ...).
std::string diagnose_ncu_output(const std::string& output);

}  // namespace kforge::profile

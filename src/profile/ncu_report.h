// Nsight Compute's CSV exports, reduced to what matters for one kernel: time, throughput as a
// share of the hardware's peak, occupancy and its limiter, resources, warp stalls and ncu's own
// rule hints. Reads both `--page details` (one row per metric, rule columns in recent versions)
// and `--page raw` (one row per kernel, metric names as columns, a units row first).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::profile {

struct NcuMetric {
  std::string section;  // empty on the raw page
  std::string name;     // "DRAM Throughput" (details) or "dram__throughput.avg.pct_of_peak_sustained_elapsed" (raw)
  std::string unit;     // "%", "nsecond", "byte", ...
  std::optional<double> value;  // absent for text values ("n/a", cache configurations)
};

struct NcuRule {
  std::string section, name, type, description;  // type: OPT (an optimisation), WRN, INF, ...
  std::optional<double> estimated_speedup_pct;
  std::string speedup_scope;  // "global" (the whole kernel) or "local" (the part the rule is about)
};

// One kernel launch as ncu reports it.
struct NcuLaunch {
  std::string id, kernel, block, grid, device;
  std::vector<NcuMetric> metrics;
  std::vector<NcuRule> rules;

  // The first metric called `name` (with unit `unit` when given) that has a number.
  std::optional<double> number(std::string_view name, std::string_view unit = {}) const;
};

std::vector<NcuLaunch> parse_ncu_details(std::string_view csv);
std::vector<NcuLaunch> parse_ncu_raw(std::string_view csv);
// Either page, told apart by its header.
std::vector<NcuLaunch> parse_ncu_csv(std::string_view csv);

struct WarpStall {
  std::string reason;        // "long_scoreboard"
  double cycles_per_issue;   // warp cycles spent in this state per issued instruction
};

// One kernel (all launches of one name), per profiled call.
struct KernelProfile {
  std::string name;
  int launches = 0;
  double duration_us = 0;  // summed over its launches
  std::optional<double> dram_pct, l2_pct, l1_pct, sm_pct, memory_pct;  // % of peak, duration-weighted
  std::optional<double> achieved_occupancy_pct, theoretical_occupancy_pct;
  std::string occupancy_limiter;  // "registers", "shared memory", "warps", "blocks per SM", "barriers", ties
                                  // joined with " and "; "none" at 100 % theoretical occupancy
  std::optional<double> registers_per_thread, shared_bytes_per_block;
  std::string block, grid;
  std::vector<WarpStall> stalls;  // largest first, at most 5
  std::vector<NcuRule> rules;     // optimisations with a whole-kernel estimate first, then local ones, largest first
};

// Groups launches by kernel name (in order of first launch) and divides counts and times by `calls`.
std::vector<KernelProfile> summarize_kernels(const std::vector<NcuLaunch>& launches, int calls);

nlohmann::json to_json(const KernelProfile& k);

// The kernel's own name from a demangled one ("void at::native::foo<float, 4>(float *)" -> "foo"), for display.
std::string short_kernel_name(const std::string& name);

}  // namespace kforge::profile

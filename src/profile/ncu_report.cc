#include "profile/ncu_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "profile/csv.h"
#include "util/errors.h"

namespace kforge::profile {

using json = nlohmann::json;

namespace {

// "1,234.5" -> 1234.5; text such as "n/a" or "CachePreferNone" -> nothing.
std::optional<double> parse_number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',' && c != ' ') digits += c;
  if (digits.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    double v = std::stod(digits, &used);
    if (used != digits.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int column(const CsvRow& header, std::string_view name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::string cell(const CsvRow& row, int col) {
  return col >= 0 && col < static_cast<int>(row.size()) ? row[col] : std::string();
}

// Rows before the header (ncu's "==PROF==" lines, a program's own output) are skipped.
std::size_t header_index(const std::vector<CsvRow>& rows) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].empty() && rows[i][0] == "ID" && column(rows[i], "Kernel Name") >= 0) return i;
  throw InputError("not an Nsight Compute CSV export: no header row with \"ID\" and \"Kernel Name\"");
}

// Converts a time to microseconds; other units pass through unchanged.
double to_us(double v, const std::string& unit) {
  if (unit == "nsecond" || unit == "ns") return v / 1e3;
  if (unit == "msecond" || unit == "ms") return v * 1e3;
  if (unit == "second" || unit == "s") return v * 1e6;
  return v;
}

double to_bytes(double v, const std::string& unit) {
  if (unit == "Kbyte" || unit == "KB") return v * 1e3;
  if (unit == "Mbyte" || unit == "MB") return v * 1e6;
  if (unit == "Kibyte" || unit == "KiB") return v * 1024;
  return v;
}

}  // namespace

std::optional<double> NcuLaunch::number(std::string_view name, std::string_view unit) const {
  for (const auto& m : metrics)
    if (m.name == name && m.value && (unit.empty() || m.unit == unit)) return m.value;
  return std::nullopt;
}

std::vector<NcuLaunch> parse_ncu_details(std::string_view csv) {
  auto rows = parse_csv(csv);
  const std::size_t h = header_index(rows);
  const CsvRow& header = rows[h];
  const int id = column(header, "ID"), kernel = column(header, "Kernel Name"), block = column(header, "Block Size"),
            grid = column(header, "Grid Size"), device = column(header, "Device"),
            section = column(header, "Section Name"), name = column(header, "Metric Name"),
            unit = column(header, "Metric Unit"), value = column(header, "Metric Value"),
            rule = column(header, "Rule Name"), rule_type = column(header, "Rule Type"),
            rule_text = column(header, "Rule Description"), speedup = column(header, "Estimated Speedup"),
            speedup_scope = column(header, "Estimated Speedup Type");
  if (name < 0 || value < 0)
    throw InputError("not an Nsight Compute details page: no \"Metric Name\"/\"Metric Value\" columns");
  std::vector<NcuLaunch> launches;
  std::map<std::string, std::size_t> by_id;
  for (std::size_t i = h + 1; i < rows.size(); ++i) {
    const CsvRow& r = rows[i];
    if (r.size() < 2) continue;
    const std::string launch_id = cell(r, id);
    auto [it, fresh] = by_id.emplace(launch_id, launches.size());
    if (fresh) launches.push_back({launch_id, cell(r, kernel), cell(r, block), cell(r, grid), cell(r, device), {}, {}});
    NcuLaunch& l = launches[it->second];
    if (!cell(r, name).empty())
      l.metrics.push_back({cell(r, section), cell(r, name), cell(r, unit), parse_number(cell(r, value))});
    if (!cell(r, rule).empty() || !cell(r, rule_text).empty())
      l.rules.push_back({cell(r, section), cell(r, rule), cell(r, rule_type), cell(r, rule_text),
                         parse_number(cell(r, speedup)), cell(r, speedup_scope)});
  }
  return launches;
}

std::vector<NcuLaunch> parse_ncu_raw(std::string_view csv) {
  auto rows = parse_csv(csv);
  const std::size_t h = header_index(rows);
  const CsvRow& header = rows[h];
  const int id = column(header, "ID"), kernel = column(header, "Kernel Name"), block = column(header, "Block Size"),
            grid = column(header, "Grid Size"), device = column(header, "Device");
  std::vector<NcuLaunch> launches;
  CsvRow units;
  for (std::size_t i = h + 1; i < rows.size(); ++i) {
    const CsvRow& r = rows[i];
    if (cell(r, id).empty()) {  // the units row has no ID
      units = r;
      continue;
    }
    NcuLaunch l{cell(r, id), cell(r, kernel), cell(r, block), cell(r, grid), cell(r, device), {}, {}};
    for (std::size_t c = 0; c < header.size() && c < r.size(); ++c)
      if (header[c].find("__") != std::string::npos)  // metric columns: "unit__counter.rollup"
        l.metrics.push_back({"", header[c], cell(units, static_cast<int>(c)), parse_number(r[c])});
    launches.push_back(std::move(l));
  }
  return launches;
}

std::vector<NcuLaunch> parse_ncu_csv(std::string_view csv) {
  auto rows = parse_csv(csv);
  const CsvRow& header = rows[header_index(rows)];
  return column(header, "Metric Name") >= 0 ? parse_ncu_details(csv) : parse_ncu_raw(csv);
}

namespace {

// Each figure under its details-page name (and unit), then its raw metric name.
struct Figure {
  std::string_view details, unit, raw;
};
constexpr Figure kDuration{"Duration", "", "gpu__time_duration.sum"};
constexpr Figure kDram{"DRAM Throughput", "%", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"};
constexpr Figure kDramAlt{"", "", "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
constexpr Figure kL2{"L2 Cache Throughput", "%", "lts__throughput.avg.pct_of_peak_sustained_elapsed"};
constexpr Figure kL1{"L1/TEX Cache Throughput", "%", "l1tex__throughput.avg.pct_of_peak_sustained_active"};
constexpr Figure kSm{"Compute (SM) Throughput", "%", "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
constexpr Figure kMemory{"Memory Throughput", "%", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"};
constexpr Figure kAchieved{"Achieved Occupancy", "%", "sm__warps_active.avg.pct_of_peak_sustained_active"};
constexpr Figure kTheoretical{"Theoretical Occupancy", "%", "sm__maximum_warps_per_active_cycle_pct"};
constexpr Figure kRegisters{"Registers Per Thread", "", "launch__registers_per_thread"};
constexpr Figure kStaticShared{"Static Shared Memory Per Block", "", "launch__shared_mem_per_block_static"};
constexpr Figure kDynamicShared{"Dynamic Shared Memory Per Block", "", "launch__shared_mem_per_block_dynamic"};

std::optional<double> figure(const NcuLaunch& l, const Figure& f) {
  if (!f.details.empty())
    if (auto v = l.number(f.details, f.unit)) return v;
  return l.number(f.raw);
}

const NcuMetric* metric_of(const NcuLaunch& l, const Figure& f) {
  for (const auto& m : l.metrics)
    if (m.value && ((!f.details.empty() && m.name == f.details && (f.unit.empty() || m.unit == f.unit)) || m.name == f.raw))
      return &m;
  return nullptr;
}

double duration_us(const NcuLaunch& l) {
  const NcuMetric* m = metric_of(l, kDuration);
  if (!m) return 0;
  // The raw page's gpu__time_duration.sum is in nanoseconds when units are "base"; the unit row says so.
  return to_us(*m->value, m->unit.empty() ? "nsecond" : m->unit);
}

double shared_bytes(const NcuLaunch& l, const Figure& f) {
  const NcuMetric* m = metric_of(l, f);
  return m ? to_bytes(*m->value, m->unit) : 0.0;
}

// The resources whose per-SM block limit is smallest limit the theoretical occupancy ("registers",
// "registers and warps" on a tie); "none" when the theoretical occupancy is already 100 %.
std::string occupancy_limiter(const NcuLaunch& l) {
  if (auto theoretical = figure(l, kTheoretical); theoretical && *theoretical >= 100) return "none";
  const std::pair<const char*, Figure> limits[] = {
      {"registers", {"Block Limit Registers", "", "launch__occupancy_limit_registers"}},
      {"shared memory", {"Block Limit Shared Mem", "", "launch__occupancy_limit_shared_mem"}},
      {"warps", {"Block Limit Warps", "", "launch__occupancy_limit_warps"}},
      {"blocks per SM", {"Block Limit SM", "", "launch__occupancy_limit_blocks"}},
      {"barriers", {"Block Limit Barriers", "", "launch__occupancy_limit_barriers"}}};
  double lowest = INFINITY;
  for (const auto& [what, f] : limits)
    if (auto v = figure(l, f)) lowest = std::min(lowest, *v);
  std::string names;
  for (const auto& [what, f] : limits)
    if (auto v = figure(l, f); v && *v == lowest) names += (names.empty() ? "" : " and ") + std::string(what);
  return names;
}

// smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio (WarpStateStats), or the
// sampled smsp__pcsamp_warps_issue_stalled_<reason> counts when only those are present.
std::map<std::string, double> stall_cycles(const NcuLaunch& l) {
  static const std::regex per_issue("smsp__average_warps?_issue_stalled_(\\w+?)_per_issue_active\\.ratio");
  std::map<std::string, double> out;
  for (const auto& m : l.metrics) {
    std::smatch match;
    // "selected" (the warp issued) and "not_issued" are not reasons for a stall.
    if (m.value && std::regex_match(m.name, match, per_issue) && match[1] != "not_issued" && match[1] != "selected")
      out[match[1]] += *m.value;
  }
  return out;
}

}  // namespace

std::vector<KernelProfile> summarize_kernels(const std::vector<NcuLaunch>& launches, int calls) {
  if (calls < 1) calls = 1;
  std::vector<KernelProfile> out;
  std::map<std::string, std::vector<const NcuLaunch*>> groups;
  std::vector<std::string> order;
  for (const auto& l : launches) {
    if (!groups.count(l.kernel)) order.push_back(l.kernel);
    groups[l.kernel].push_back(&l);
  }
  for (const auto& name : order) {
    const auto& group = groups[name];
    KernelProfile k;
    k.name = name;
    k.launches = static_cast<int>(group.size());
    double total_us = 0;
    for (const NcuLaunch* l : group) total_us += duration_us(*l);
    // Throughputs: weighted by each launch's duration, so the long launches count most.
    auto weighted = [&](const Figure& f, const Figure* alt = nullptr) -> std::optional<double> {
      double sum = 0, weight = 0;
      for (const NcuLaunch* l : group) {
        auto v = figure(*l, f);
        if (!v && alt) v = figure(*l, *alt);
        if (!v) continue;
        const double w = total_us > 0 ? duration_us(*l) : 1.0;
        sum += *v * w;
        weight += w;
      }
      return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
    };
    k.dram_pct = weighted(kDram, &kDramAlt);
    k.l2_pct = weighted(kL2);
    k.l1_pct = weighted(kL1);
    k.sm_pct = weighted(kSm);
    k.memory_pct = weighted(kMemory);
    k.achieved_occupancy_pct = weighted(kAchieved);
    std::map<std::string, double> stalls;
    double stall_weight = 0;
    for (const NcuLaunch* l : group) {
      const double w = total_us > 0 ? duration_us(*l) : 1.0;
      auto s = stall_cycles(*l);
      if (s.empty()) continue;
      for (const auto& [reason, cycles] : s) stalls[reason] += cycles * w;
      stall_weight += w;
    }
    for (const auto& [reason, cycles] : stalls) k.stalls.push_back({reason, cycles / stall_weight});
    std::sort(k.stalls.begin(), k.stalls.end(), [](const auto& a, const auto& b) { return a.cycles_per_issue > b.cycles_per_issue; });
    if (k.stalls.size() > 5) k.stalls.resize(5);
    // Launch configuration and rules: from the longest launch.
    const NcuLaunch* longest = *std::max_element(group.begin(), group.end(), [](const auto* a, const auto* b) {
      return duration_us(*a) < duration_us(*b);
    });
    k.theoretical_occupancy_pct = figure(*longest, kTheoretical);
    k.occupancy_limiter = occupancy_limiter(*longest);
    k.registers_per_thread = figure(*longest, kRegisters);
    if (metric_of(*longest, kStaticShared) || metric_of(*longest, kDynamicShared))
      k.shared_bytes_per_block = shared_bytes(*longest, kStaticShared) + shared_bytes(*longest, kDynamicShared);
    k.block = longest->block;
    k.grid = longest->grid;
    for (const auto& r : longest->rules)
      if (r.type != "OK" && !r.description.empty()) k.rules.push_back(r);
    // ncu's estimates: a global one is the whole kernel's, a local one only the affected part's.
    auto rank = [](const NcuRule& r) {
      return std::tuple(r.type == "OPT" && r.estimated_speedup_pct, r.speedup_scope == "global",
                        r.estimated_speedup_pct.value_or(-1));
    };
    std::stable_sort(k.rules.begin(), k.rules.end(), [&](const NcuRule& a, const NcuRule& b) { return rank(a) > rank(b); });
    k.launches = (k.launches + calls - 1) / calls;
    k.duration_us = total_us / calls;
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.duration_us > b.duration_us; });
  return out;
}

json to_json(const KernelProfile& k) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json stalls = json::array();
  for (const auto& s : k.stalls) stalls.push_back({{"reason", s.reason}, {"cycles_per_issue", s.cycles_per_issue}});
  json rules = json::array();
  for (const auto& r : k.rules)
    rules.push_back({{"section", r.section}, {"rule", r.name}, {"type", r.type}, {"description", r.description},
                     {"estimated_speedup_pct", opt(r.estimated_speedup_pct)}, {"speedup_scope", r.speedup_scope}});
  return {{"name", k.name},
          {"short_name", short_kernel_name(k.name)},
          {"launches_per_call", k.launches},
          {"duration_us_per_call", k.duration_us},
          {"dram_pct", opt(k.dram_pct)},
          {"l2_pct", opt(k.l2_pct)},
          {"l1_pct", opt(k.l1_pct)},
          {"sm_pct", opt(k.sm_pct)},
          {"memory_pct", opt(k.memory_pct)},
          {"achieved_occupancy_pct", opt(k.achieved_occupancy_pct)},
          {"theoretical_occupancy_pct", opt(k.theoretical_occupancy_pct)},
          {"occupancy_limiter", k.occupancy_limiter},
          {"registers_per_thread", opt(k.registers_per_thread)},
          {"shared_bytes_per_block", opt(k.shared_bytes_per_block)},
          {"block", k.block},
          {"grid", k.grid},
          {"stalls", stalls},
          {"rules", rules}};
}

std::string short_kernel_name(const std::string& name) {
  std::string text = name;
  for (std::size_t pos; (pos = text.find("(anonymous namespace)")) != std::string::npos;) text.replace(pos, 21, "anon");
  if (text.rfind("void ", 0) == 0) text = text.substr(5);
  // The function's own name ends where its first template or argument list starts.
  const std::size_t end = text.find_first_of("<(");
  std::string base = text.substr(0, end);
  if (auto pos = base.rfind("::"); pos != std::string::npos) base = base.substr(pos + 2);
  // A single identifier as template argument names the real kernel (Kernel2<cutlass_80_simt_sgemm_...>).
  if (end != std::string::npos && text[end] == '<') {
    const std::size_t close = text.find('>', end);
    const std::string arg = close == std::string::npos ? "" : text.substr(end + 1, close - end - 1);
    if (!arg.empty() && arg.find_first_of(", <") == std::string::npos) base += "<" + arg + ">";
  }
  return base.empty() ? name : base;
}

}  // namespace kforge::profile

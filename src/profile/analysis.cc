#include "profile/analysis.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "eval/sol_text.h"
#include "eval/sol_work.h"
#include "util/quantity_text.h"

namespace kforge::profile {

using json = nlohmann::json;

namespace {

double num(const json& j, const char* key, double fallback = 0) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

bool has(const json& j, const char* key) { return j.contains(key) && j[key].is_number(); }


std::string time_text(double us) {
  return us >= 1000 ? fmt::format("{:.3g} ms", us / 1000) : fmt::format("{:.3g} µs", us);
}

std::string one_line(std::string text, std::size_t max = 360) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > max) text = text.substr(0, max - 3) + "...";
  return text;
}

// The kernel with the largest share of the call's GPU time, from Nsight Compute.
const json* main_kernel(const json& side) {
  if (!side.contains("ncu") || !side["ncu"].contains("kernels") || side["ncu"]["kernels"].empty()) return nullptr;
  return &side["ncu"]["kernels"][0];
}

double total_kernel_us(const json& side) {
  double total = 0;
  for (const auto& k : side["ncu"]["kernels"]) total += num(k, "duration_us_per_call");
  return total;
}

// The busiest unit of a kernel: {"DRAM", 91.3}.
std::pair<std::string, double> busiest_unit(const json& k) {
  std::pair<std::string, double> best{"", -1};
  for (const auto& [key, label] : {std::pair{"dram_pct", "DRAM bandwidth"}, std::pair{"l2_pct", "L2 bandwidth"},
                                   std::pair{"l1_pct", "L1/shared bandwidth"}, std::pair{"sm_pct", "SM compute"}})
    if (has(k, key) && k[key].get<double>() > best.second) best = {label, k[key].get<double>()};
  return best;
}

}  // namespace

json achieved(double median_ms, const json& sol) {
  json a = {{"median_ms", median_ms}};
  if (median_ms <= 0 || !sol.is_object()) return a;
  const double s = median_ms / 1e3;
  const double bytes = num(sol, "bytes");
  a["bytes_per_s"] = bytes / s;
  if (num(sol, "bandwidth_bytes_per_s") > 0) a["pct_of_bandwidth"] = 100 * bytes / s / num(sol, "bandwidth_bytes_per_s");
  // The FLOP rate of the work that bounds the compute side: a softmax's by its elementwise work.
  const auto work = eval::sol_arithmetic(sol);
  a["flops_per_s"] = work ? work->flops / s : 0.0;
  if (work) a["pct_of_peak_flops"] = 100 * work->flops / s / work->peak_flops_per_s;
  if (work && work->elementwise) a["flops_are_elementwise"] = true;
  if (num(sol, "sol_ms") > 0) a["pct_of_sol"] = 100 * num(sol, "sol_ms") / median_ms;
  return a;
}

json analyze(const json& side, const json& sol) {
  json out = {{"limiters", json::array()}};
  auto add = [&](const std::string& what, const std::string& text) {
    if (out["limiters"].size() < 3) out["limiters"].push_back({{"what", what}, {"text", text}});
  };
  const json ach = side.value("achieved", json::object());
  const json tp = side.value("torch_profiler", json::object());
  if (const json* k = main_kernel(side)) {
    auto [unit, pct] = busiest_unit(*k);
    const bool compute = unit == "SM compute";
    out["bound"] = compute ? "compute" : "memory";
    out["basis"] = "ncu";
    out["pct_of_peak"] = pct;
    out["peak_of"] = unit;
    const double total = total_kernel_us(side);
    const double share = total > 0 ? 100 * num(*k, "duration_us_per_call") / total : 100;
    add("throughput", fmt::format("{} at {:.1f}% of peak in `{}` ({:.0f}% of the call's GPU time, {} per call under "
                                  "Nsight Compute)", unit,
                                  pct, k->value("short_name", ""), share, time_text(num(*k, "duration_us_per_call"))));
    // The rule ncu expects most from, when it expects something worth doing.
    // Rules come ranked (ncu_report.h): the first optimisation with an estimate worth doing.
    for (const auto& r : k->value("rules", json::array()))
      if (r.value("type", "") == "OPT" && has(r, "estimated_speedup_pct") && r["estimated_speedup_pct"].get<double>() >= 5) {
        add("ncu_rule", fmt::format("ncu {}: est. {:.0f}% speedup ({}): {}", r.value("rule", ""),
                                    r["estimated_speedup_pct"].get<double>(),
                                    r.value("speedup_scope", "") == "global" ? "whole kernel" : "of the part concerned",
                                    one_line(r.value("description", ""))));
        break;
      }
    const json stalls = k->value("stalls", json::array());
    if (!stalls.empty()) {
      double all = 0;
      for (const auto& s : stalls) all += num(s, "cycles_per_issue");
      const json& top = stalls[0];
      add("warp_stall", fmt::format("warps stalled on {}: {:.2f} cycles per issued instruction ({:.0f}% of the stall "
                                    "cycles listed)", top.value("reason", ""), num(top, "cycles_per_issue"),
                                    all > 0 ? 100 * num(top, "cycles_per_issue") / all : 0.0));
    }
    if (has(*k, "achieved_occupancy_pct") && num(*k, "achieved_occupancy_pct") < 60)
      add("occupancy", fmt::format("achieved occupancy {:.0f}% of {:.0f}% theoretical (limited by {}; {:.0f} "
                                   "registers/thread, {} shared memory/block)",
                                   num(*k, "achieved_occupancy_pct"), num(*k, "theoretical_occupancy_pct"),
                                   k->value("occupancy_limiter", "?"), num(*k, "registers_per_thread"),
                                   bytes_text(num(*k, "shared_bytes_per_block"))));
  } else if (sol.is_object() && sol.contains("bound")) {
    out["bound"] = sol["bound"];
    out["basis"] = "model";
    const bool memory = sol["bound"] == "memory";
    out["pct_of_peak"] = memory ? num(ach, "pct_of_bandwidth") : num(ach, "pct_of_peak_flops");
    out["peak_of"] = memory ? "measured bandwidth" : "measured FLOP/s";
    if (memory)
      add("bandwidth", fmt::format("moves at least {} per call at {:.4g} GB/s: {:.1f}% of the {:.4g} GB/s kforge "
                                   "measured for memory streams of this size", bytes_text(num(sol, "bytes")),
                                   num(ach, "bytes_per_s") / 1e9, num(ach, "pct_of_bandwidth"),
                                   num(sol, "bandwidth_bytes_per_s") / 1e9));
    else if (const auto work = eval::sol_arithmetic(sol); work && work->elementwise)
      add("arithmetic", fmt::format("elementwise work of {} per call at the FMA units' rate (its transcendentals "
                                    "included) runs at {}: {:.1f}% of the {} {} vector rate kforge measured",
                                    flop_text(work->flops), flop_rate_text(num(ach, "flops_per_s")),
                                    num(ach, "pct_of_peak_flops"), flop_rate_text(work->peak_flops_per_s),
                                    sol.value("dtype", "")));
    else
      add("arithmetic", fmt::format("{:.4g} GFLOP per call at {}: {:.1f}% of the {} kforge measured ({} matmul)",
                                    num(sol, "flops") / 1e9, flop_rate_text(num(ach, "flops_per_s")),
                                    num(ach, "pct_of_peak_flops"), flop_rate_text(num(sol, "peak_flops_per_s")),
                                    sol.value("dtype", "")));
  }
  // Launch overhead: the GPU idles between many small kernels.
  if (num(tp, "kernels_per_call") > 1 && num(tp, "wall_us_per_call") > 0) {
    const double busy = 100 * num(tp, "device_busy_us_per_call") / num(tp, "wall_us_per_call");
    if (busy < 80)
      add("launch_overhead", fmt::format("the GPU is busy {:.0f}% of the call: {:.0f} kernel launches per call, {} "
                                         "of launch API time on the host under torch.profiler", busy, num(tp, "kernels_per_call"),
                                         time_text(num(tp, "launch_api_us_per_call"))));
  }
  // On the CPU: where the host time of a call goes (the operators torch.profiler sees, and the rest:
  // the candidate's own compiled code and Python).
  if (num(tp, "kernels_per_call") == 0 && num(tp, "wall_us_per_call") > 0) {
    const double wall = num(tp, "wall_us_per_call");
    const json ops = tp.value("host_ops", json::array());
    if (num(tp, "outside_torch_ops_us_per_call") >= 0.5 * wall)
      add("own_code", fmt::format("{:.0f}% of the call ({} under torch.profiler) runs outside torch operators: the candidate's own "
                                  "code (its compiled kernels and Python)",
                                  100 * num(tp, "outside_torch_ops_us_per_call") / wall,
                                  time_text(num(tp, "outside_torch_ops_us_per_call"))));
    else if (!ops.empty() && num(ops[0], "cpu_us_per_call") >= 0.1 * wall)
      add("host_op", fmt::format("{} takes {:.0f}% of the call ({} per call under torch.profiler, {} threads)", ops[0].value("name", ""),
                                 100 * num(ops[0], "cpu_us_per_call") / wall, time_text(num(ops[0], "cpu_us_per_call")),
                                 tp.value("threads", 0)));
  }
  return out;
}

namespace {

void render_side(std::string& out, const std::string& label, const json& side) {
  const json ach = side.value("achieved", json::object());
  const json an = side.value("analysis", json::object());
  out += fmt::format("{}: {:.4g} ms per call", label, num(ach, "median_ms"));
  // Restated from the evaluation whose verdict the reader sees beside it (anchor.h).
  if (ach.value("source", "") == "evaluation") out += " (the evaluation's median, which the verdict uses)";
  if (has(ach, "pct_of_sol")) out += fmt::format(", {:.1f}% of speed of light", num(ach, "pct_of_sol"));
  if (an.contains("bound"))
    out += fmt::format("; {}-bound ({} at {:.1f}% of peak, {})", an["bound"].get<std::string>(),
                       an.value("peak_of", ""), num(an, "pct_of_peak"),
                       an.value("basis", "") == "ncu" ? "Nsight Compute" : "kforge's model");
  out += "\n";
  const json tp = side.value("torch_profiler", json::object());
  if (num(tp, "kernels_per_call") > 0) {
    out += fmt::format("  {:.0f} kernel launch{} per call ({} distinct), GPU busy {} per call under torch.profiler:",
                       num(tp, "kernels_per_call"),
                       num(tp, "kernels_per_call") == 1 ? "" : "es",
                       tp.value("distinct_kernels", 0), time_text(num(tp, "device_busy_us_per_call")));
    int shown = 0;
    for (const auto& k : tp.value("kernels", json::array())) {
      if (shown++ == 3) break;
      out += fmt::format(" {} x{:.0f} {:.0f}%;", k.value("short_name", k.value("name", "")),
                         num(k, "launches_per_call"), 100 * num(k, "share"));
    }
    out.back() = '\n';
  } else if (num(tp, "wall_us_per_call") > 0) {
    out += fmt::format("  {} torch threads; host time per call under torch.profiler {}: {:.0f}% in torch operators, "
                       "{:.0f}% outside them (own code)\n",
                       tp.value("threads", 0), time_text(num(tp, "wall_us_per_call")),
                       100 * num(tp, "host_ops_us_per_call") / num(tp, "wall_us_per_call"),
                       100 * num(tp, "outside_torch_ops_us_per_call") / num(tp, "wall_us_per_call"));
  }
  if (const json* k = main_kernel(side)) {
    auto pct = [&](const char* key) { return has(*k, key) ? fmt::format("{:.1f}%", (*k)[key].get<double>()) : std::string("?"); };
    out += fmt::format("  main kernel `{}` ({} per call under Nsight Compute): DRAM {}, L2 {}, L1 {}, SM {} of peak; occupancy {} "
                       "achieved / {} theoretical (limit: {}); {:.0f} registers/thread, {} shared memory/block\n",
                       k->value("short_name", ""), time_text(num(*k, "duration_us_per_call")), pct("dram_pct"),
                       pct("l2_pct"), pct("l1_pct"), pct("sm_pct"), pct("achieved_occupancy_pct"),
                       pct("theoretical_occupancy_pct"), k->value("occupancy_limiter", "?"),
                       num(*k, "registers_per_thread"), bytes_text(num(*k, "shared_bytes_per_block")));
  }
  int i = 0;
  for (const auto& l : an.value("limiters", json::array())) out += fmt::format("  limiter {}: {}\n", ++i, l.value("text", ""));
}

}  // namespace

std::string render_text(const json& doc) {
  std::string out;
  const json sol = doc.value("sol", json::object());
  out += fmt::format("Profile of `{}` on {} ({})", doc.value("problem_name", ""), doc.value("target", ""),
                     doc.value("device_name", doc.value("device", "")));
  if (doc.contains("correct") && doc["correct"].is_boolean() && !doc["correct"].get<bool>())
    out += " -- WARNING: the candidate's output was wrong on the profiled inputs";
  out += "\n";
  if (sol.contains("sol_ms")) {
    // Without counted FLOPs the bound is the bytes alone: no arithmetic rate or route is quoted.
    const std::string compute =
        eval::sol_counts_flops(sol)
            ? fmt::format("{} ({}) at {}{} and ", flop_text(num(sol, "flops")), sol.value("dtype", ""),
                          flop_rate_text(num(sol, "peak_flops_per_s")),
                          sol.value("route", json()).is_string() ? " (" + sol["route"].get<std::string>() + ")" : "")
            : eval::sol_flops_clause(sol);
    out += fmt::format("Speed of light (kforge model): {:.4g} ms for {}{} at {} (measured peaks): the problem is "
                       "{}-bound\n",
                       num(sol, "sol_ms"), compute, bytes_text(num(sol, "bytes")),
                       bandwidth_text(num(sol, "bandwidth_bytes_per_s")), sol.value("bound", "?"));
    if (const std::string pointwise = eval::sol_pointwise_text(sol); !pointwise.empty())
      out += "Speed of light, " + pointwise + "\n";
  }
  const json sides = doc.value("sides", json::object());
  if (sides.contains("candidate")) render_side(out, "Candidate", sides["candidate"]);
  if (sides.contains("reference")) render_side(out, "Reference (PyTorch eager)", sides["reference"]);
  for (const auto& n : doc.value("notes", json::array())) out += fmt::format("Note: {}\n", n.get<std::string>());
  return out;
}

}  // namespace kforge::profile

#include "loop/request_facts.h"

#include <chrono>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "eval/device_lock.h"
#include "eval/sol_text.h"
#include "eval/worker_launch.h"
#include "loop/problem_facts.h"
#include "util/environment.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/quantity_text.h"
#include "util/subprocess.h"

namespace kforge::loop {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string ms_text(double ms) { return fmt::format("{:.4g} ms", ms); }

// "0.412 ms (p25 0.401, p75 0.425; IQR 6% of the median, 30 reps)"
json spread_context(const json& t) {
  if (!t.is_object() || !t.value("median_ms", json()).is_number()) return json();
  const double median = t["median_ms"].get<double>();
  return {{"median", ms_text(median)},
          {"p25", ms_text(t.value("p25_ms", median))},
          {"p75", ms_text(t.value("p75_ms", median))},
          {"iqr_pct", fmt::format("{:.0f}%", 100 * t.value("iqr_rel", 0.0))},
          {"reps", t.value("reps", 0)}};
}

json rules_context(const EvalOptions& base, const json& baseline) {
  const auto& allowed = base.target.allowed_torch_calls;
  json rules = {{"allowed_calls", join(allowed)}, {"library_allowed", !allowed.empty()}};
  std::vector<std::string> main;
  const json ops = baseline.value("main_computation", json::array());
  for (const auto& op : ops)
    if (op.is_string()) main.push_back(op.get<std::string>());
  if (!main.empty()) rules["main_computation"] = join(main);
  const bool strict = base.precision != "relaxed";
  rules["precision"] = base.precision;
  rules["strict"] = strict;
  json tolerances = json::array();
  const json tols = baseline.value("tolerances", json::object());  // kept: items() of a temporary dangles
  for (const auto& [dtype, tol] : tols.items())
    if (tol.is_number()) tolerances.push_back({{"dtype", dtype}, {"tol", fmt::format("{:g}", tol.get<double>())}});
  rules["tolerances"] = tolerances;
  rules["has_tolerances"] = !tolerances.empty();
  const json audit = baseline.value("audit", json::object());
  rules["audit_k"] = fmt::format("{:g}", audit.value("k", 16.0));
  rules["audit_ulps"] = fmt::format("{:g}", audit.value("ulps", 8.0));
  return rules;
}

json device_context(const EvalOptions& base, const json& baseline) {
  const json d = baseline.value("device", json::object());
  json dev = {{"spec", base.device}, {"measured", d.is_object() && d.contains("name")}};
  if (!dev["measured"].get<bool>()) return dev;
  dev["name"] = d.value("name", "");
  dev["gpu"] = d.value("kind", "") != "cpu";
  dev["threads"] = d.value("threads", 0);
  if (d.value("sm_count", json()).is_number()) dev["sm_count"] = d["sm_count"];
  if (d.value("compute_capability", json()).is_string()) dev["compute_capability"] = d["compute_capability"];
  if (d.value("memory_bytes", json()).is_number()) dev["memory"] = fmt::format("{:.1f} GiB", d["memory_bytes"].get<double>() / (1ull << 30));
  if (d.value("l2_bytes", 0.0) > 0) dev["l2"] = fmt::format("{:.0f} MiB", d["l2_bytes"].get<double>() / (1 << 20));
  // A CPU's vector instruction sets and caches (worker/kforge_worker/backends/cpu_facts.py): what -march=native
  // compiles for and what blocking should fit.
  std::vector<std::string> isa;
  for (const auto& flag : d.value("isa", json::array()))
    if (flag.is_string()) isa.push_back(flag.get<std::string>());
  if (!isa.empty()) dev["isa"] = fmt::format("{}", fmt::join(isa, ", "));
  std::vector<std::string> caches;
  for (const auto& c : d.value("caches", json::array())) {
    if (!c.is_object() || !c.value("size_bytes", json()).is_number()) continue;
    const std::string type = c.value("type", "");
    const double size = c["size_bytes"].get<double>();
    const int shared = c.value("shared_by", 1);
    caches.push_back(fmt::format("L{}{} {}{}", c.value("level", 0), type == "Data" ? "d" : type == "Instruction" ? "i" : "",
                                 size >= (1 << 20) ? fmt::format("{:.4g} MiB", size / (1 << 20))
                                                   : fmt::format("{:.4g} KiB", size / (1 << 10)),
                                 shared > 1 ? fmt::format(" shared by {} CPUs", shared) : ""));
  }
  if (!caches.empty()) dev["caches"] = fmt::format("{}", fmt::join(caches, ", "));
  const json peaks = baseline.value("peaks", json::object());
  std::vector<std::string> flops;
  const json rates = peaks.value("flops_per_s", json::object());
  for (const auto& [dtype, rate] : rates.items())
    if (rate.is_number()) flops.push_back(dtype + " " + flop_rate_text(rate.get<double>()));
  if (!flops.empty()) dev["flops_text"] = join(flops, "; ");
  std::vector<std::string> bandwidth;
  const json levels = peaks.value("bandwidth", json::array());
  for (const auto& level : levels)
    if (level.value("bytes_per_s", json()).is_number())
      bandwidth.push_back(fmt::format("{} (working set {})", bandwidth_text(level["bytes_per_s"].get<double>()),
                                      bytes_text(level.value("working_set_bytes", 0.0))));
  if (!bandwidth.empty()) dev["bandwidth_text"] = join(bandwidth, "; ");
  std::string implausible;
  const json notes = peaks.value("implausible", json::array());
  for (const auto& p : notes)
    if (p.is_string()) implausible += (implausible.empty() ? "" : "; ") + p.get<std::string>();
  if (!implausible.empty()) dev["implausible"] = implausible;
  return dev;
}

json baseline_context(const json& baseline) {
  json b = {{"measured", baseline.contains("eager")}};
  if (baseline.contains("error")) b["error"] = baseline["error"];
  if (!b["measured"].get<bool>()) return b;
  b["eager"] = spread_context(baseline["eager"]);
  if (json c = spread_context(baseline.value("compile", json())); !c.is_null()) b["compile"] = c;
  if (baseline.contains("compile_error")) b["compile_error"] = baseline["compile_error"];
  const json sol = baseline.value("sol", json::object());
  if (sol.value("sol_ms", json()).is_number()) {
    const double sol_ms = sol["sol_ms"].get<double>();
    json s = {{"ms", ms_text(sol_ms)},
              {"bound", sol.value("bound", "?")},
              {"flops", flop_text(sol.value("flops", 0.0))},
              {"bytes", bytes_text(sol.value("bytes", 0.0))},
              {"dtype", sol.value("dtype", "")},
              {"bandwidth", bandwidth_text(sol.value("bandwidth_bytes_per_s", 0.0))}};
    // No counted FLOPs: the bound is the bytes alone, and no arithmetic route or rate is quoted.
    if (eval::sol_counts_flops(sol)) {
      s["peak"] = flop_rate_text(sol["peak_flops_per_s"].get<double>());
      if (sol.contains("route")) s["route"] = sol["route"];
    }
    if (const std::string pointwise = eval::sol_pointwise_text(sol); !pointwise.empty())
      s["pointwise"] = "E" + pointwise.substr(1);
    const double eager = baseline["eager"].value("median_ms", 0.0);
    if (sol_ms > 0 && eager > 0) s["eager_pct"] = fmt::format("{:.3g}%", 100 * sol_ms / eager);
    b["sol"] = s;
  }
  return b;
}

}  // namespace

json measure_baseline(const EvalOptions& base, const fs::path& scratch) {
  fs::create_directories(scratch / "home");
  const int threads = base.threads > 0 ? base.threads : available_cpus();  // as the evaluator resolves it
  const fs::path out = scratch / "baseline.json";
  std::vector<std::string> argv = {base.python, "-m", "kforge_worker", "baseline", base.problem.string(),
                                   "--device", base.device, "--threads", std::to_string(threads),
                                   "--reps", std::to_string(std::max(5, base.reps)), "--precision", base.precision,
                                   "--cache", (cache_dir() / "peaks").string(), "--json", out.string()};
  if (!base.compile_baseline) argv.push_back("--no-compile");
  for (const auto& [name, value] : base.overrides) {
    argv.push_back("--set");
    argv.push_back(name + "=" + value);
  }
  // The reference worker's environment: its caches (Inductor's, so the evaluations reuse this
  // compile), the target's [env] and its device selection.
  WorkerDirs dirs{scratch / "home", scratch / "home", scratch / "home"};
  std::map<std::string, std::string> env = worker_environment(WorkerRole::kReference, base, dirs, threads);
  env.erase("KFORGE_RESPONSE_FD");
  std::error_code ec;
  fs::remove(out, ec);
  std::optional<DeviceLock> lock = DeviceLock::acquire(base.device, base.target.device_lock, state_dir() / "locks");
  CommandResult r = run_command(argv, std::chrono::seconds(static_cast<int>(base.reference_timeout_s)), &env);
  lock.reset();
  if (r.exit_code == 0 && fs::exists(out)) {
    try {
      return json::parse(read_file(out));
    } catch (const std::exception& e) {
      return {{"error", std::string("unreadable baseline measurement: ") + e.what()}};
    }
  }
  std::string tail = r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output;
  spdlog::warn("baseline measurement failed (exit code {}): {}", r.exit_code, tail);
  return {{"error", fmt::format("the baseline measurement failed (exit code {})", r.exit_code)}};
}

json request_facts(const EvalOptions& base, const json& baseline) {
  return {{"rules", rules_context(base, baseline)},
          {"device", device_context(base, baseline)},
          {"baseline", baseline_context(baseline)}};
}

}  // namespace kforge::loop

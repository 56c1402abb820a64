#include "cli/executor_flags.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/bench_options.h"
#include "bench/ray_executor.h"
#include "util/environment.h"
#include "util/errors.h"

namespace kforge {

void add_executor_flags(CLI::App* cmd, ExecutorFlags& f, int& jobs, const std::string& jobs_help) {
  cmd->add_option("--jobs", jobs, jobs_help)->check(CLI::Range(0, 256))->capture_default_str();
  cmd->add_option("--executor", f.executor, "Where evaluations run: local (this host) or ray (a Ray cluster); default: "
                  "kforge.toml's [bench] executor, else local")->check(CLI::IsMember({"local", "ray"}));
  cmd->add_option("--ray-address", f.ray_address, "With --executor ray: a running Ray cluster (default: start a "
                  "local Ray instance for this command and stop it after)");
}

void choose_executor(const ExecutorFlags& f, const Config& config, bool sandbox, bool device_given,
                     std::string& executor, std::string& ray_address) {
  if (executor.empty()) executor = "local";
  if (!f.executor.empty()) executor = f.executor;
  else if (auto e = config.get_string("bench.executor"); e && executor == "local") executor = *e;
  executor = bench::parse_executor(executor);
  if (!f.ray_address.empty()) ray_address = f.ray_address;
  else if (auto r = config.get_string("bench.ray_address"); r && ray_address.empty()) ray_address = *r;
  if (executor != "ray") return;
  if (!sandbox) throw InputError("--executor ray evaluates only inside the candidate sandbox: drop --no-sandbox");
  if (device_given) throw InputError("--device picks this host's devices; with --executor ray, Ray places each evaluation");
}

int default_local_jobs(const std::vector<std::string>& devices, unsigned cpus) {
  if (devices.empty() || devices == std::vector<std::string>{"cpu"}) return 1;
  return static_cast<int>(std::min<std::size_t>(std::max(1u, cpus), 2 * devices.size()));
}

StartedExecutor start_executor(const std::string& executor, const std::string& ray_address, int jobs,
                               const std::vector<std::string>& devices, const EvalOptions& e,
                               const std::filesystem::path& kforge_exe, const std::filesystem::path& log_dir) {
  StartedExecutor out;
  out.jobs = jobs;
  out.where = fmt::format("{}", fmt::join(devices, ","));
  if (executor == "ray") {
    bench::RayExecutorOptions r;
    r.address = ray_address;
    r.python = e.python;
    r.kforge_exe = kforge_exe;
    r.device_kind = e.target.device;
    r.log_file = log_dir / "ray-bridge.log";
    r.local_cpus = available_cpus();
    auto ray = std::make_unique<bench::RayExecutor>(r);
    // One evaluation checked while another is timed on each device, as on a local GPU.
    if (out.jobs <= 0) out.jobs = std::max(1, static_cast<int>(std::ceil(2 * ray->device_units())));
    out.where = fmt::format("Ray cluster {} ({} node{}, {} {} unit{})", ray_address.empty() ? "started here" : ray->address(),
                            ray->nodes(), ray->nodes() == 1 ? "" : "s", ray->device_units(),
                            e.target.device == "cpu" ? "kforge_cpu" : "GPU", ray->device_units() == 1 ? "" : "s");
    out.executor = std::move(ray);
  } else {
    if (out.jobs <= 0) out.jobs = default_local_jobs(devices, std::thread::hardware_concurrency());
    out.local = new bench::LocalExecutor();
    out.executor.reset(out.local);
  }
  return out;
}

}  // namespace kforge

// The `ray` executor: each evaluation is a Ray task on a cluster (an existing one at an address,
// or a local instance started for this bench and shut down after it), its EvalResult sent back
// here to be stored. This process drives Ray through a small Python bridge
// (worker/kforge_ray/bridge.py, JSON lines over pipes, as kforge drives its workers); the bridge
// runs with this process's environment minus anything that looks like a credential, so API keys
// never reach Ray. See docs/bench.md#executors.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/executor.h"
#include "util/subprocess.h"

namespace kforge::bench {

struct RayExecutorOptions {
  std::string address;               // a running cluster; empty: a local Ray instance for this bench
  std::string python;                // interpreter with the `ray` package (requirements-ray.txt)
  std::filesystem::path kforge_exe;  // the binary each node runs (installed at the same path on every node)
  std::string device_kind;           // the target's device kind: "cpu" or a GPU kind ("cuda")
  std::filesystem::path log_file;    // the bridge's own output
  int local_cpus = 0;                // a local instance: CPUs Ray may use (0: Ray's own count)
};

// The Ray resources of one evaluation: one unit of its device for a timing, so Ray never puts two
// timings on one GPU (or one CPU node: the custom resource `kforge_cpu`), and a quarter of one for
// an untimed check, so checks share a device and a timing waits until they leave it.
nlohmann::json ray_resources(const std::string& device_kind, bool timing);

// The bridge's environment: `env` without any variable whose name looks like a credential, except
// Ray's own cluster token (RAY_AUTH_*).
std::map<std::string, std::string> bridge_environment(std::map<std::string, std::string> env);

class RayExecutor : public Executor {
 public:
  // Starts the bridge and waits until it is connected; throws InputError (with the bridge's
  // explanation) when Ray is missing, the cluster cannot be reached or offers no such device.
  explicit RayExecutor(const RayExecutorOptions& options);
  ~RayExecutor() override;  // shuts the bridge down (and with it a local Ray instance)

  ExecutedEval evaluate(const EvalOptions& options, bool alone) override;
  bool relays_runs() const override { return true; }
  ExecutedRequest run_request(const nlohmann::json& request) override;

  const std::string& address() const { return address_; }
  int nodes() const { return nodes_; }
  double device_units() const { return device_units_; }  // of the device kind, over the whole cluster

 private:
  void pump();                                   // the I/O thread: sends requests, hands out replies
  void lose(const std::string& reason);          // mutex held: fails every waiting evaluation

  RayExecutorOptions options_;
  std::unique_ptr<Subprocess> bridge_;
  std::string address_;
  int nodes_ = 0;
  double device_units_ = 0;
  std::thread io_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::deque<std::string> outbox_;
  std::map<std::int64_t, std::promise<nlohmann::json>> waiting_;
  std::int64_t next_id_ = 1;
  std::string lost_;  // why the bridge is gone; empty while it runs
};

}  // namespace kforge::bench

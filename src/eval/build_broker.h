// The trusted end of a candidate's build channel. A candidate cannot write the shared build cache
// (its sandbox shows it read-only); when a helper misses the cache it sends the source and flags over
// a socket (fd 4 in the worker), and the broker runs kforge's builder (kforge_worker.builder.sandboxed_build)
// outside the candidate's sandbox: the builder computes the cache key itself, compiles inside a
// sandbox of its own (no network, only the toolchain and a fresh folder) and installs the result
// with an atomic rename. Cache hits never reach the broker.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "util/sandbox.h"
#include "util/subprocess.h"

namespace kforge {

struct BuildBrokerSettings {
  std::string python;                          // the worker's interpreter runs the builder
  std::map<std::string, std::string> env;      // the builder's environment (caches, toolchain)
  std::optional<std::string> bwrap;            // the compiler's sandbox, where bubblewrap works
  SandboxPolicy compiler_policy;               // its view; each build's folder is added writable
  std::optional<HostIds> run_as;               // the compiler's host uid and gid (owns its build folder)
  std::filesystem::path work_root;             // where each build's fresh folder is made
  double timeout_s = 600;                      // per build
  // Start one builder with torch imported before the first request (a load_inline candidate's
  // build would otherwise wait for that import, seconds of a cold build).
  bool prestart = false;
};

class BuildBroker {
 public:
  explicit BuildBroker(BuildBrokerSettings settings);
  ~BuildBroker();  // stops serving; a build in progress is killed
  BuildBroker(const BuildBroker&) = delete;
  BuildBroker& operator=(const BuildBroker&) = delete;

  // The socket end the worker gets (as fd 4); close it here once the worker has started.
  int worker_end() const { return worker_fd_; }
  void close_worker_end();

  // Serves one request line, returns the reply line (public for tests).
  std::string handle(const std::string& line);

 private:
  void serve();
  std::unique_ptr<Subprocess> start_builder(bool warm) const;

  BuildBrokerSettings settings_;
  int fd_ = -1;
  int worker_fd_ = -1;
  int builds_ = 0;
  std::unique_ptr<Subprocess> warm_;  // the prestarted builder, until the first request takes it
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kforge

// `kforge eval-request` (internal; the Ray executor runs it on each node, docs/bench.md#executors):
// reads one evaluation request (bench/eval_request.h) on stdin, evaluates it on this machine and
// writes {"result": EvalResult} (a pair: {"result": PairMeasurement}) or {"refused": why} as one
// JSON line on stdout. Nothing is stored
// here: the driver stores the result. A node evaluates only inside the candidate sandbox.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "bench/eval_request.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "eval/eval_view.h"
#include "eval/evaluator.h"
#include "eval/worker_launch.h"
#include "eval/worker_pool.h"
#include "loop/keep_decision.h"
#include "loop/pair_timing.h"
#include "target/target.h"
#include "util/errors.h"
#include "util/paths.h"
#include "util/sandbox.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A private folder for the request's files and logs, removed when the evaluation ends.
class WorkDir {
 public:
  WorkDir() {
    std::string pattern = (fs::temp_directory_path() / "kforge-node-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw InternalError("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~WorkDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

json evaluate_request(const json& request) {
  if (!request.value("sandbox", false))
    return {{"refused", "the request turns the candidate sandbox off; a Ray node evaluates only inside bubblewrap"}};
  if (!usable_bwrap())
    return {{"refused", "the candidate sandbox (bubblewrap) cannot run on this node: install bubblewrap and allow "
                        "unprivileged user namespaces (docs/isolation.md)"}};
  WorkDir dir;
  auto registry = TargetRegistry::load(data_dir() / "targets");
  EvalOptions options = bench::eval_options_from_request(request, registry, dir.path());
  if (!fs::exists(options.python)) options.python = resolve_python("", "");  // installed elsewhere on this node
  if (bench::is_pair_request(request)) {
    const fs::path challenger = bench::challenger_from_request(request, dir.path());
    WorkerPool pool;
    loop::PairMeasurement m = loop::measure_pair(options, options.candidate, challenger, pool, nullptr, nullptr);
    return {{"result", loop::pair_measurement_to_json(m)}};
  }
  EvalResult result = evaluate(options);
  if (const auto isolation = EvalView::decode(result.doc).isolation; isolation && *isolation != "bubblewrap")
    return {{"refused", fmt::format("the candidate ran without bubblewrap ({}); its result is not trusted", *isolation)}};
  return {{"result", std::move(result.doc)}};
}

int run_eval_request(const GlobalOptions& global) {
  // Dies with the Ray worker that runs it, so a killed worker leaves no evaluation behind.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return kExitInternal;
  setup_logging(global);
  json request = json::parse(std::cin, nullptr, false);
  if (request.is_discarded() || !request.is_object()) throw InputError("eval-request: stdin is not a JSON object");
  std::cout << evaluate_request(request).dump() << std::endl;
  return kExitOk;
}

}  // namespace

void register_eval_request_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("eval-request", "Evaluate one request from stdin (the Ray executor's node side)");
  cmd->group("");  // internal: not listed in --help
  cmd->callback([&global, exit_code] { *exit_code = run_eval_request(global); });
}

}  // namespace kforge

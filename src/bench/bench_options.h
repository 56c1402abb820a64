// Everything `kforge bench` was asked to do, stored with the bench (as JSON) so that
// `kforge bench --resume BENCH` continues with exactly the same settings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/run_options.h"

namespace kforge::bench {

struct BenchOptions {
  std::string mode;                  // "candidates" (evaluate files) or "llm" (a `kforge run` per problem)
  std::string suite;                 // as given on the command line
  std::string candidates_dir;        // absolute; candidates mode
  std::vector<std::string> devices;  // one measurement at a time on each
  int jobs = 0;                      // problems in progress at once (0: chosen from the devices)
  std::string out_dir;               // reports and the runs' outputs
  std::string executor = "local";    // where evaluations run: local or ray (docs/bench.md#executors)
  std::string ray_address;           // ray: a running cluster; empty: a local Ray instance per session
  // Target, model, budgets and evaluation settings shared by every problem; the seed is drawn
  // once per bench so every problem's evaluations are reproducible.
  loop::RunOptions run;
};

nlohmann::json to_json(const BenchOptions& options);
BenchOptions options_from_json(const nlohmann::json& json);

// "local" or "ray"; throws InputError naming the choices otherwise.
std::string parse_executor(const std::string& name);

// "cuda:0,cuda:1" -> {"cuda:0", "cuda:1"}; throws InputError on an empty entry or a device that
// is not cpu, cuda or cuda:N.
std::vector<std::string> parse_device_list(const std::string& list);

}  // namespace kforge::bench

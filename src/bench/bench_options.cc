#include "bench/bench_options.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge::bench {

using json = nlohmann::json;

json to_json(const BenchOptions& o) {
  return {{"mode", o.mode}, {"suite", o.suite},     {"candidates_dir", o.candidates_dir}, {"devices", o.devices},
          {"jobs", o.jobs}, {"out_dir", o.out_dir}, {"executor", o.executor}, {"ray_address", o.ray_address},
          {"run", loop::to_json(o.run)}};
}

BenchOptions options_from_json(const json& j) {
  BenchOptions o;
  o.mode = j.value("mode", "");
  o.suite = j.value("suite", "");
  o.candidates_dir = j.value("candidates_dir", "");
  o.devices = j.value("devices", std::vector<std::string>{});
  o.jobs = j.value("jobs", 1);
  o.out_dir = j.value("out_dir", "");
  o.executor = j.value("executor", "local");
  o.ray_address = j.value("ray_address", "");
  o.run = loop::options_from_json(j.value("run", json::object()));
  return o;
}

std::string parse_executor(const std::string& name) {
  if (name != "local" && name != "ray")
    throw InputError(fmt::format("executor '{}': choose local (this host) or ray (a Ray cluster)", name));
  return name;
}

std::vector<std::string> parse_device_list(const std::string& list) {
  static const std::regex device(R"(cpu|cuda(:\d+)?)");
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = list.find(',', start);
    std::string d = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!std::regex_match(d, device))
      throw InputError(fmt::format("--device: '{}' is not a device (cpu, cuda or cuda:N, comma-separated)", d));
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw InputError(fmt::format("--device: {} is listed twice", d));
    out.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace kforge::bench

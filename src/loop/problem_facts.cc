#include "loop/problem_facts.h"

#include <chrono>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "eval/sol_text.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/quantity_text.h"
#include "util/subprocess.h"

extern char** environ;

namespace kforge::loop {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string describe_one(const json& v) {
  const std::string kind = v.value("kind", "");
  if (kind == "tensor") {
    std::string shape;
    for (const auto& d : v.value("shape", json::array())) shape += (shape.empty() ? "" : ", ") + d.dump();
    return fmt::format("{} tensor [{}]", v.value("dtype", "?"), shape);
  }
  if (kind == "list" || kind == "tuple") {
    std::string items;
    for (const auto& item : v.value("items", json::array())) items += (items.empty() ? "" : "; ") + describe_one(item);
    return fmt::format("{} of ({})", kind, items);
  }
  if (v.contains("value")) return fmt::format("{} {}", kind, v["value"].dump());
  if (v.contains("why")) return "unknown (" + v.value("why", "") + ")";
  return kind;
}

void list(std::string& out, const json& values, const char* label) {
  int i = 0;
  for (const auto& v : values) out += fmt::format("- {} {}: {}\n", label, i++, describe_one(v));
}

}  // namespace

std::string shapes_text(const json& d) {
  std::string out;
  list(out, d.value("inputs", json::array()), "forward input");
  list(out, d.value("init_inputs", json::array()), "constructor argument");
  list(out, d.value("outputs", json::array()), "output");
  return out;
}

namespace {
ProblemFacts facts_of(const fs::path& description, const fs::path& failure, const fs::path& problem) {
  ProblemFacts facts;
  if (fs::exists(description)) {
    try {
      json d = json::parse(read_file(description));
      facts.source = d.value("source", "");
      facts.shapes = shapes_text(d);
    } catch (const std::exception& e) {
      facts.note = std::string("unreadable description: ") + e.what();
    }
  } else if (fs::exists(failure)) {
    facts.note = read_file(failure);
  }
  if (facts.source.empty()) facts.source = read_file(problem);
  return facts;
}
}  // namespace

ProblemFacts describe_problem(const std::string& python, const fs::path& problem,
                              const std::map<std::string, std::string>& overrides, const fs::path& scratch) {
  fs::create_directories(scratch);
  const fs::path out = scratch / "problem.json";
  const fs::path failed = scratch / "describe-failed.txt";
  // Described once per run: a resumed run's prompts state what the first ones did, also on a machine
  // whose interpreter could not describe it (a run moved between machines).
  if (fs::exists(out) || fs::exists(failed)) return facts_of(out, failed, problem);
  const fs::path partial = scratch / "problem.json.partial";  // renamed once whole: a stop leaves no half file
  std::vector<std::string> argv = {python, "-m", "kforge_worker", "describe", problem.string(), "--json", partial.string()};
  for (const auto& [name, value] : overrides) {
    argv.push_back("--set");
    argv.push_back(name + "=" + value);
  }
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["PYTHONPATH"] = (data_dir() / "worker").string();
  env["OMP_NUM_THREADS"] = "1";
  CommandResult r = run_command(argv, std::chrono::seconds(600), &env);
  std::error_code ec;
  if (r.exit_code == 0 && fs::exists(partial)) {
    fs::rename(partial, out, ec);
  } else {
    fs::remove(partial, ec);
    std::string tail = r.output.size() > 400 ? r.output.substr(r.output.size() - 400) : r.output;
    std::ofstream(failed) << fmt::format("the shapes could not be read (exit code {}): {}", r.exit_code, tail);
  }
  return facts_of(out, failed, problem);
}

std::string sol_text(const EvalView& evaluation) {
  if (!evaluation.sol || !evaluation.sol->sol_ms) return "";
  const SolView& sol = *evaluation.sol;
  const bool counted_flops = eval::sol_counts_flops(sol.as_written);
  std::string out = fmt::format("- bound: {}-bound, speed of light {:.3g} ms ({}{} at {})\n", sol.bound.value_or("?"),
                                *sol.sol_ms, eval::sol_flops_clause(sol.as_written), bytes_text(sol.bytes.value_or(0)),
                                bandwidth_text(sol.bandwidth_bytes_per_s.value_or(0)));
  if (const std::string pointwise = eval::sol_pointwise_text(sol.as_written); !pointwise.empty())
    out += "- " + pointwise + "\n";
  if (counted_flops && !sol.route.empty()) {
    out += "- fastest allowed route: " + sol.route;
    std::string others;
    for (const SolRoute& r : sol.routes)
      if (r.route != sol.route && r.peak_flops_per_s)
        others += fmt::format("{}{}: {}", others.empty() ? "" : "; ", r.route, flop_rate_text(*r.peak_flops_per_s));
    if (!others.empty()) out += " (others: " + others + ")";
    out += "\n";
  }
  if (sol.candidate_pct_of_sol)
    out += fmt::format("- this candidate: {:.3g}% of speed of light", *sol.candidate_pct_of_sol);
  if (sol.eager_pct_of_sol) out += fmt::format("; PyTorch eager: {:.3g}%", *sol.eager_pct_of_sol);
  out += "\n";
  if (sol.note) out += "- note: " + *sol.note + "\n";
  return out;
}

}  // namespace kforge::loop

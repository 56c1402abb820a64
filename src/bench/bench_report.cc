#include "bench/bench_report.h"

#include <set>

#include <fmt/format.h>

#include "bench/bench_options.h"
#include "report/cells.h"
#include "report/metrics.h"

namespace kforge::bench {

using json = nlohmann::json;

json llm_metrics(const json& problems) {
  std::int64_t calls = 0, in = 0, out = 0;
  double cost = 0;
  int solved = 0;
  for (const auto& p : problems) {
    if (!p.contains("llm")) continue;
    calls += p["llm"].value("calls", std::int64_t{0});
    in += p["llm"].value("input_tokens", std::int64_t{0});
    out += p["llm"].value("output_tokens", std::int64_t{0});
    cost += p["llm"].value("cost_usd", 0.0);
    if (p.value("correct", false)) ++solved;
  }
  return {{"calls", calls},
          {"input_tokens", in},
          {"output_tokens", out},
          {"cost_usd", cost},
          {"solved", solved},
          {"tokens_per_solved", solved ? json(static_cast<double>(in + out) / solved) : json()},
          {"cost_usd_per_solved", solved ? json(cost / solved) : json()}};
}

std::string terminal_summary(const json& doc) {
  const json& m = doc.at("metrics");
  std::string out = fmt::format("bench {}: {} of {} problems correct", doc.at("bench").value("id", 0),
                                m.value("correct", 0), m.value("problems", 0));
  if (m.value("unstable", 0) > 0) out += fmt::format(", {} with unstable timings", m.value("unstable", 0));
  out += fmt::format("; wall {:.1f} s\n", m.value("wall_seconds", json()).is_number() ? m["wall_seconds"].get<double>() : 0.0);
  for (const auto& c : report::baseline_columns()) {
    if (!m["baselines_measured"].value(c.key, false)) continue;
    out += fmt::format("  {:<42} geomean {} (all problems, failed = 1.0), per problem {}, fast_1 {}\n", c.title,
                       report::format_speedup(m["geomean_speedup"][c.key]["all_problems"]),
                       report::format_quartiles(m["speedup_quartiles"][c.key]),
                       report::format_percent(m["fast_p"][c.key]["1"]));
  }
  if (auto w = report::unstable_warning(m); !w.empty()) out += "warning: " + w + "\n";
  return out;
}

json build_bench_report(const Store& store, std::int64_t bench_id) {
  auto b = store.bench(bench_id);
  if (!b) return nullptr;
  BenchOptions opt = options_from_json(b->options);
  json summary = b->summary.is_object() ? b->summary : json::object();
  json bench = {{"id", b->id},
                {"mode", b->mode},
                {"suite", b->suite},
                {"target", b->target},
                {"devices", opt.devices},
                {"jobs", opt.jobs},
                {"precision", opt.run.precision},
                {"compile_baseline", opt.run.compile_baseline},
                {"seed", opt.run.seed},
                {"status", b->status},
                {"created_at", b->created_at},
                {"updated_at", b->updated_at},
                {"wall_seconds", summary.value("wall_seconds", json())},
                {"out_dir", opt.out_dir}};
  json env = summary.value("environment", json());
  if (b->mode == "llm") bench["llm"] = opt.run.llm;
  else bench["candidates_dir"] = opt.candidates_dir;

  json problems = json::array();
  std::vector<report::ProblemResult> done;
  for (const auto& row : store.bench_problems(bench_id)) {
    json p = {{"name", row.name}, {"problem", row.problem}};
    if (!row.candidate.empty()) p["candidate"] = row.candidate;
    if (row.status == "done" && row.outcome.is_object()) {
      p.update(row.outcome);
      done.push_back(report::problem_result_from_json(row.outcome));
    } else {
      p["status"] = "pending";
      p["correct"] = false;
      p["message"] = row.status == "running" ? "started, not finished" : "not started";
      if (row.run_id > 0) p["run_id"] = row.run_id;
    }
    problems.push_back(std::move(p));
  }
  // The torch versions the problems were evaluated with, from their evaluations; without any, the
  // version installed in the interpreter when the session ended.
  std::set<std::string> torch;
  for (const auto& p : problems)
    if (p.contains("torch") && p["torch"].is_string() && !p["torch"].get<std::string>().empty())
      torch.insert(p["torch"].get<std::string>());
  if (env.is_object()) {
    if (torch.empty() && env.value("torch", json()).is_string() && !env["torch"].get<std::string>().empty())
      torch.insert(env["torch"].get<std::string>());
    env["torch"] = torch;
  }
  bench["environment"] = env;
  json metrics = report::compute_metrics(done);
  metrics["done"] = done.size();
  metrics["problems_in_suite"] = problems.size();
  metrics["wall_seconds"] = bench["wall_seconds"];
  metrics["precision"] = opt.run.precision;
  if (b->mode == "llm") metrics["llm"] = llm_metrics(problems);
  return {{"kind", "bench"}, {"bench", bench}, {"metrics", metrics}, {"problems", problems}};
}

}  // namespace kforge::bench

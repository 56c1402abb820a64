#include "bench/bench_report.h"

#include "bench/bench_options.h"
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
  json metrics = report::compute_metrics(done);
  metrics["done"] = done.size();
  metrics["problems_in_suite"] = problems.size();
  metrics["wall_seconds"] = bench["wall_seconds"];
  metrics["precision"] = opt.run.precision;
  if (b->mode == "llm") metrics["llm"] = llm_metrics(problems);
  return {{"kind", "bench"}, {"bench", bench}, {"metrics", metrics}, {"problems", problems}};
}

}  // namespace kforge::bench

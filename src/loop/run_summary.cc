#include "loop/run_summary.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

namespace kforge::loop {

using json = nlohmann::json;

namespace {

std::string ms(const json& v) { return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : "-"; }
std::string times(const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-"; }

const std::map<std::string, std::string> kStopReasons = {
    {"rounds", "the round budget was used up"},
    {"tokens", "the token budget was used up"},
    {"cost", "the cost budget was used up"},
    {"time", "the time limit was reached"},
    {"plateau", "no improvement for several rounds (plateau)"},
    {"speed_of_light", "the best candidate is close to speed-of-light"},
    {"interrupted", "interrupted"},
    {"problem_error", "the reference problem failed"},
    {"environment_error", "this machine cannot evaluate (see `kforge doctor`)"},
    {"llm_error", "the LLM provider failed"},
};

}  // namespace

json build_summary(const Store& store, std::int64_t run_id) {
  json s;
  auto run = store.run(run_id);
  if (!run) return s;
  s["run_id"] = run_id;
  s["status"] = run->status;
  s["problem"] = run->problem;
  s["target"] = run->target;
  s["llm"] = run->llm;
  s["created_at"] = run->created_at;
  s["options"] = run->options;

  // Per candidate step: how its functional passes ended and what was decided about it.
  json candidates = json::array();
  std::map<std::string, std::size_t> row_of;
  json best = nullptr;
  json recommendations = json::object();
  json best_by_round = json::array();
  std::map<int, json> best_at_round;
  int max_round = -1;
  for (const auto& d : store.decisions(run_id)) {
    if (d.kind == "stop") {  // recorded after the last round, with the count of rounds run
      s["stop_reason"] = d.detail.value("reason", "");
      s["rounds"] = d.detail.value("rounds", 0);
      continue;
    }
    max_round = std::max(max_round, d.round);
    if (d.kind == "analysis") {
      recommendations[std::to_string(d.round)] = d.detail.value("recommendations", json::array());
      continue;
    }
    if (d.kind == "repaired") continue;
    auto it = row_of.find(d.step);
    if (it == row_of.end()) {
      it = row_of.emplace(d.step, candidates.size()).first;
      candidates.push_back({{"round", d.round}, {"step", d.step}, {"candidate_sha256", d.candidate_sha256}});
    }
    json& row = candidates[it->second];
    if (d.kind == "accepted" || d.kind == "rejected") {
      row["decision"] = d.kind;
      row["reason"] = d.detail.value("reason", "");
      if (d.detail.contains("median_ms")) row["median_ms"] = d.detail["median_ms"];
      if (d.detail.contains("speedup_vs_eager")) row["speedup_vs_eager"] = d.detail["speedup_vs_eager"];
      if (d.kind == "accepted") {
        best = d.detail;
        best["step"] = d.step;
        best["round"] = d.round;
        best["candidate_sha256"] = d.candidate_sha256;
        best_at_round[d.round] = best;
      }
    } else {
      row["status"] = d.detail.value("status", d.kind);
      row["summary"] = d.detail.value("summary", "");
      row["outcome"] = d.kind;
      if (d.detail.contains("median_ms")) row["median_ms"] = d.detail["median_ms"];
      if (d.detail.contains("speedup_vs_eager")) row["speedup_vs_eager"] = d.detail["speedup_vs_eager"];
    }
  }
  json current = nullptr;
  for (int r = 0; r <= max_round; ++r) {
    if (best_at_round.count(r)) current = best_at_round[r];
    best_by_round.push_back({{"round", r},
                             {"step", current.is_null() ? json() : current["step"]},
                             {"speedup_vs_eager", current.is_null() ? json() : current["speedup_vs_eager"]},
                             {"median_ms", current.is_null() ? json() : current["median_ms"]}});
  }
  s["candidates"] = candidates;
  s["best"] = best;
  s["best_by_round"] = best_by_round;
  s["recommendations"] = recommendations;
  s["beats_pytorch"] = !best.is_null() && best.value("beats_pytorch", false);
  if (!s.contains("stop_reason")) s["stop_reason"] = run->summary.is_object() ? run->summary.value("stop_reason", "") : "";

  json usage = {{"calls", 0}, {"input_tokens", 0}, {"output_tokens", 0}, {"cost_usd", 0.0}};
  for (const auto& c : store.llm_calls(run_id)) {
    usage["calls"] = usage["calls"].get<int>() + 1;
    usage["input_tokens"] = usage["input_tokens"].get<std::int64_t>() + c.input_tokens;
    usage["output_tokens"] = usage["output_tokens"].get<std::int64_t>() + c.output_tokens;
    usage["cost_usd"] = usage["cost_usd"].get<double>() + c.response.value("cost_usd", 0.0);
  }
  s["usage"] = usage;
  s["evaluations"] = store.run_evaluations(run_id).size();
  s["verdict"] = verdict_text(s);
  return s;
}

std::string verdict_text(const json& s) {
  const json& best = s.value("best", json());
  if (best.is_null())
    return "No correct candidate was found. Keep using the PyTorch reference.";
  std::string line = fmt::format("Best candidate {}: {} ms, {} vs PyTorch eager", best.value("step", ""),
                                 ms(best.value("median_ms", json())), times(best.value("speedup_vs_eager", json())));
  if (best.value("speedup_vs_compile", json()).is_number())
    line += fmt::format(", {} vs torch.compile", times(best["speedup_vs_compile"]));
  line += ".";
  if (!best.value("beats_pytorch", false))
    line += fmt::format(
        " It does not beat the faster of PyTorch eager and torch.compile ({}). Keep using PyTorch for this problem.",
        best.value("pytorch_verdict", ""));
  return line;
}

std::string markdown_report(const json& s) {
  std::string out = fmt::format("# kforge run {}: `{}` on `{}`\n\n", s.value("run_id", 0),
                                std::filesystem::path(s.value("problem", "")).filename().string(), s.value("target", ""));
  out += fmt::format("**Result.** {}\n\n", s.value("verdict", ""));
  const json usage = s.value("usage", json::object());
  std::string stop = s.value("stop_reason", "");
  auto it = kStopReasons.find(stop);
  out += "| | |\n|---|---|\n";
  out += fmt::format("| Problem | `{}` |\n", s.value("problem", ""));
  out += fmt::format("| Target | `{}` |\n", s.value("target", ""));
  out += fmt::format("| Model | `{}` |\n", s.value("llm", ""));
  out += fmt::format("| Status | {} |\n", s.value("status", ""));
  out += fmt::format("| Stopped because | {} |\n", it != kStopReasons.end() ? it->second : stop);
  out += fmt::format("| LLM calls | {} ({} input / {} output tokens, ${:.4f}) |\n", usage.value("calls", 0),
                     usage.value("input_tokens", 0), usage.value("output_tokens", 0), usage.value("cost_usd", 0.0));
  out += fmt::format("| Evaluations | {} |\n\n", s.value("evaluations", 0));

  out += "## Speedup over iterations\n\n";
  out += "| Round | Best so far | Time (ms) | Speedup vs eager | |\n|---|---|---|---|---|\n";
  double top = 0;
  for (const auto& r : s.value("best_by_round", json::array()))
    if (r.value("speedup_vs_eager", json()).is_number()) top = std::max(top, r["speedup_vs_eager"].get<double>());
  for (const auto& r : s.value("best_by_round", json::array())) {
    const json sp = r.value("speedup_vs_eager", json());
    std::string bar;
    if (sp.is_number() && top > 0)
      for (int i = 0; i < static_cast<int>(30 * sp.get<double>() / top + 0.5); ++i) bar += "█";
    out += fmt::format("| {} | {} | {} | {} | {} |\n", r.value("round", 0),
                       r.value("step", json()).is_string() ? r["step"].get<std::string>() : "none", ms(r.value("median_ms", json())),
                       times(sp), bar);
  }
  out += "\n## Candidates\n\n| Round | Candidate | Outcome | Time (ms) | vs eager | Decision |\n|---|---|---|---|---|---|\n";
  for (const auto& c : s.value("candidates", json::array())) {
    std::string summary = c.value("summary", "");
    for (auto& ch : summary)
      if (ch == '|' || ch == '\n') ch = ' ';
    if (summary.size() > 110) summary = summary.substr(0, 107) + "...";
    std::string decision = c.value("decision", "");
    if (!decision.empty()) decision += ": " + c.value("reason", "");
    for (auto& ch : decision)
      if (ch == '|') ch = ' ';
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", c.value("round", 0), c.value("step", ""), summary,
                       ms(c.value("median_ms", json())), times(c.value("speedup_vs_eager", json())), decision);
  }
  const json recs = s.value("recommendations", json::object());
  if (!recs.empty()) {
    out += "\n## Performance analysis\n";
    for (const auto& [round, items] : recs.items()) {
      out += fmt::format("\nRound {}:\n\n", round);
      int i = 0;
      for (const auto& item : items) out += fmt::format("{}. {}\n", ++i, item.get<std::string>());
    }
  }
  return out;
}

std::string text_report(const json& s) {
  std::string out = fmt::format("run {} ({}): {} on {}, model {}\n", s.value("run_id", 0), s.value("status", ""),
                                s.value("problem", ""), s.value("target", ""), s.value("llm", ""));
  int round = -1;
  for (const auto& c : s.value("candidates", json::array())) {
    if (c.value("round", 0) != round) {
      round = c.value("round", 0);
      out += fmt::format("round {}\n", round);
    }
    out += fmt::format("  {:<12} {}", c.value("step", ""), c.value("summary", ""));
    if (c.contains("decision")) out += fmt::format("  -> {} ({})", c.value("decision", ""), c.value("reason", ""));
    out += "\n";
  }
  out += "best by round:";
  for (const auto& r : s.value("best_by_round", json::array()))
    out += fmt::format(" {}", times(r.value("speedup_vs_eager", json())));
  const json usage = s.value("usage", json::object());
  out += fmt::format("\nLLM: {} calls, {} input / {} output tokens; {} evaluations\n", usage.value("calls", 0),
                     usage.value("input_tokens", 0), usage.value("output_tokens", 0), s.value("evaluations", 0));
  std::string stop = s.value("stop_reason", "");
  if (!stop.empty()) out += fmt::format("stopped: {}\n", kStopReasons.count(stop) ? kStopReasons.at(stop) : stop);
  out += s.value("verdict", "") + "\n";
  return out;
}

}  // namespace kforge::loop

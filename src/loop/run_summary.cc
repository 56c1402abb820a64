#include "util/clean_text.h"
#include "loop/run_summary.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "eval/eval_result.h"
#include "eval/library_share.h"
#include "loop/attribution.h"
#include "loop/run_options.h"

namespace kforge::loop {

using json = nlohmann::json;

namespace {

std::string ms(const json& v) { return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : "-"; }
// "0.52 (0.5-0.55)": a candidate's median and its 25th-75th percentiles, in milliseconds.
std::string ms_with_spread(const json& row) {
  const json spread = row.value("timing_spread", json());
  if (!row.value("median_ms", json()).is_number() || !spread.is_object()) return ms(row.value("median_ms", json()));
  return fmt::format("{} ({}-{})", ms(row["median_ms"]), ms(spread.value("p25_ms", json())),
                     ms(spread.value("p75_ms", json())));
}
std::string times(const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-"; }

// "1.52x [1.40, 1.61]" for a {point, ci_low, ci_high} object; "-" otherwise.
std::string ratio(const json& r) {
  if (!r.is_object() || !r.value("point", json()).is_number()) return "-";
  const double p = r["point"], lo = r.value("ci_low", p), hi = r.value("ci_high", p);
  return lo == p && hi == p ? fmt::format("{:.2f}x", p) : fmt::format("{:.2f}x [{:.2f}, {:.2f}]", p, lo, hi);
}

// A table cell of kforge's own text (steps, decisions, ratios): one line, no `|`.
std::string plain_cell(std::string s, std::size_t max = 110) {
  for (auto& ch : s)
    if (ch == '|' || ch == '\n') ch = ' ';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// A table cell of text that quotes candidates and models (errors, advice): one line, no HTML,
// images, links or emphasis of its own (util/clean_text.h), at most `max` characters of it.
std::string cell(std::string s, std::size_t max = 110) {
  s = terminal_text(s);
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return markdown_text(s);
}

// Only candidate steps (r<round>.s<sample>.a<attempt>) make candidate rows.
bool is_candidate_step(const std::string& step) {
  static const std::regex pattern(R"(r\d+\.s\d+\.a\d+)");
  return std::regex_match(step, pattern);
}

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
    {"evaluation_error", "an evaluation could not run (the executor refused or failed it)"},
};

// The decision kinds that judge a correct candidate against the best.
bool is_judgement(const std::string& kind) { return kind == "accepted" || kind == "rejected" || kind == "undecided"; }

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
  // What the run's last session ran with (kforge, torch, Python, host, command line); null while it runs.
  s["environment"] = run->summary.is_object() ? run->summary.value("environment", json()) : json();

  // The candidate's timing spread of each evaluation, by step, for the report's time columns.
  const auto evaluations = store.run_evaluations(run_id);
  std::map<std::string, json> spread_of;
  for (const auto& [step, e] : evaluations)
    if (auto t = timing_spread(e.result); t.contains("candidate")) spread_of[step] = t["candidate"];
  const auto spread = [&spread_of](const json& detail) {
    auto it = spread_of.find(detail.value("eval_step", ""));
    return it == spread_of.end() ? json() : it->second;
  };

  // Per candidate step: how its functional passes ended and what was decided about it. Its one
  // number is its speedup over eager from its own evaluation (point and interval).
  json candidates = json::array();
  std::map<std::string, std::size_t> row_of;
  json best = nullptr;
  json recommendations = json::object();
  json best_by_round = json::array();
  std::map<int, json> best_at_round;
  int max_round = -1;
  json profiles = json::array();
  for (const auto& d : store.decisions(run_id)) {
    if (d.kind == "baseline") {  // measured before round 0: what the first prompt stated
      const json& b = d.detail;
      const auto median = [&](const char* which) { return b.value(which, json::object()).value("median_ms", json()); };
      s["baseline"] = {{"device", b.value("device", json::object()).value("name", "")},
                       {"eager_ms", median("eager")},
                       {"compile_ms", median("compile")},
                       {"sol_ms", b.value("sol", json::object()).value("sol_ms", json())},
                       {"sol_route", b.value("sol", json::object()).value("route", json())}};
      if (b.contains("error")) s["baseline"]["error"] = b["error"];
      continue;
    }
    if (d.kind == "stop") {  // recorded after the last round, with the count of rounds run
      s["stop_reason"] = d.detail.value("reason", "");
      s["rounds"] = d.detail.value("rounds", 0);
      continue;
    }
    max_round = std::max(max_round, d.round);
    if (d.kind == "profile") {  // the profile step of a round: whether Nsight Compute's metrics came
      json p = {{"step", d.step}, {"round", d.round}, {"candidate", d.detail.value("candidate", "")}};
      if (d.detail.contains("ncu")) p["ncu"] = d.detail["ncu"];
      if (d.detail.contains("error")) p["error"] = d.detail["error"];
      profiles.push_back(p);
      continue;
    }
    if (d.kind == "analysis") {
      recommendations[std::to_string(d.round)] = d.detail.value("recommendations", json::array());
      continue;
    }
    if (!is_candidate_step(d.step) || d.kind == "repaired") continue;
    auto it = row_of.find(d.step);
    if (it == row_of.end()) {
      it = row_of.emplace(d.step, candidates.size()).first;
      candidates.push_back({{"round", d.round}, {"step", d.step}, {"candidate_sha256", d.candidate_sha256}});
    }
    json& row = candidates[it->second];
    if (d.detail.contains("idea") && !d.detail["idea"].get<std::string>().empty()) row["idea"] = d.detail["idea"];
    if (d.kind == "quarantined") {
      row["flags"] = d.detail.value("flags", json::array());
      row["flag_reasons"] = d.detail.value("reasons", json::array());
      continue;
    }
    if (is_judgement(d.kind)) {
      row["decision"] = d.kind;
      row["reason"] = d.detail.value("reason", "");
      if (d.detail.contains("median_ms")) {
        row["median_ms"] = d.detail["median_ms"];
        row["timing_spread"] = spread(d.detail);
      }
      if (d.detail.contains("vs_eager")) row["vs_eager"] = d.detail["vs_eager"];
      const json keep = d.detail.value("keep", json());
      if (keep.is_object() && keep.value("outcome", "") != "failed")
        row["vs_best"] = {{"point", keep.value("ratio", 0.0)}, {"ci_low", keep.value("ci_low", 0.0)},
                          {"ci_high", keep.value("ci_high", 0.0)}, {"measurements", keep.value("measurements", 0)}};
      if (d.kind == "accepted") {
        best = d.detail;
        best["step"] = d.step;
        best["round"] = d.round;
        best["candidate_sha256"] = d.candidate_sha256;
        best["timing_spread"] = spread(d.detail);
        best_at_round[d.round] = best;
      }
    } else {
      row["status"] = d.detail.value("status", d.kind);
      // A correct candidate's figures are in their own columns; its outcome says only that.
      row["summary"] = d.kind == "correct" ? "correct" : d.detail.value("summary", "");
      row["outcome"] = d.kind;
      if (d.detail.contains("median_ms")) {
        row["median_ms"] = d.detail["median_ms"];
        row["timing_spread"] = spread(d.detail);
      }
      if (d.detail.contains("vs_eager")) row["vs_eager"] = d.detail["vs_eager"];
    }
  }
  for (auto& row : candidates)  // the one number, also as a plain field for tools
    row["speedup_vs_eager"] = row.contains("vs_eager") && row["vs_eager"].is_object() ? row["vs_eager"]["point"] : json();
  if (best.is_object()) {
    best["speedup_vs_eager"] = best.value("vs_eager", json()).is_object() ? best["vs_eager"]["point"] : json();
    best["speedup_vs_compile"] = best.value("vs_compile", json()).is_object() ? best["vs_compile"]["point"] : json();
  }
  json current = nullptr;
  for (int r = 0; r <= max_round; ++r) {
    if (best_at_round.count(r)) current = best_at_round[r];
    const json eager = current.is_null() ? json() : current.value("vs_eager", json());
    best_by_round.push_back({{"round", r},
                             {"step", current.is_null() ? json() : current["step"]},
                             {"speedup_vs_eager", eager.is_object() ? eager["point"] : json()},
                             {"median_ms", current.is_null() ? json() : current["median_ms"]},
                             {"timing_spread", current.is_null() ? json() : current.value("timing_spread", json())}});
  }
  s["candidates"] = candidates;
  s["profiles"] = profiles;
  s["best"] = best;
  s["best_by_round"] = best_by_round;
  s["recommendations"] = recommendations;
  s["advice"] = attribute_recommendations(recommendations, candidates);
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
  // How large each request was (characters of its messages): a round's generation request carries
  // the problem, the notes, the best and the attempts, so it should not grow with the round.
  json sizes = json::array();
  for (const auto& c : store.llm_calls(run_id)) {
    std::size_t chars = 0, messages = 0;
    for (const auto& m : c.request.value("messages", json::array())) {
      ++messages;
      for (const auto& p : m.value("content", json::array())) chars += p.value("text", "").size();
    }
    sizes.push_back({{"step", c.step}, {"chars", chars}, {"messages", messages}});
  }
  s["request_sizes"] = sizes;
  s["evaluations"] = evaluations.size();
  s["verdict"] = verdict_text(s);
  return s;
}

// One line, one figure per baseline: the evaluator's interleaved estimate with its interval.
std::string verdict_text(const json& s) {
  const json& best = s.value("best", json());
  if (best.is_null()) {
    // A run stopped before it judged its first correct candidate still has that candidate.
    if (s.value("status", "") != "finished")
      for (const auto& c : s.value("candidates", json::array()))
        if (c.value("status", "") == "correct")
          return fmt::format("The run stopped before judging its candidates; {} is correct. Resume it "
                             "(`kforge run --resume {}`) to time and judge it.",
                             c.value("step", ""), s.value("run_id", 0));
    return "No correct candidate was found. Keep using the PyTorch reference.";
  }
  if (!best.value("median_ms", json()).is_number() && !best.value("vs_eager", json()).is_object()) {
    // Correctness only (an interpreter, or timing turned off): nothing to say about speed either way.
    const json options = s.value("options", json::object());
    std::string why;
    if (options.value("compile_only", false)) why = " (--compile-only: it ran in the target's interpreter)";
    else if (!options.value("timing", true)) why = " (timing was turned off)";
    return fmt::format("Best candidate {} is correct. No speed was measured{}, so whether it beats PyTorch is unknown.",
                       best.value("step", ""), why);
  }
  std::string line = fmt::format("Best candidate {}: {} ms, {} vs PyTorch eager", best.value("step", ""),
                                 ms(best.value("median_ms", json())), ratio(best.value("vs_eager", json())));
  if (best.value("vs_compile", json()).is_object()) line += fmt::format(", {} vs torch.compile", ratio(best["vs_compile"]));
  line += " (95% confidence intervals)";
  line += best.value("sol_fraction", json()).is_number()
              ? fmt::format("; {:.3g}% of speed of light.", 100 * best["sol_fraction"].get<double>())
              : "; no speed-of-light figure.";
  // The rule of eval/speed_claim.h, as the accepted decision recorded it (older runs: beats_pytorch).
  const json claim = best.value("speed_claim", json::object());
  const std::string verdict = claim.is_object() ? claim.value("verdict", "") : "";
  if (verdict == "faster" || (verdict.empty() && best.value("beats_pytorch", false)))
    line += " It beats both PyTorch baselines beyond the noise.";
  else if (verdict == "inconclusive")
    line += " Whether it beats PyTorch is inconclusive: an interval includes 1. Measure again before choosing "
            "(`kforge eval` of best.py on an idle machine, with more --reps).";
  else
    line += " It does not beat the faster of PyTorch eager and torch.compile beyond the noise. Keep using PyTorch for "
            "this problem.";
  if (!best.value("flags", json::array()).empty())
    line += fmt::format(" Its measurement stayed flagged ({}).", best["flags"].dump());
  const json library = best.value("library_calls", json::object());
  const std::string kept = describe_library_calls(library.value("operators", json::array()), library.value("share", json()));
  if (!kept.empty()) line += fmt::format(" It keeps library calls the target allows: {}.", kept);
  return line;
}

// "generation r0 14.2 kB, r1 15.1 kB, r2 15.3 kB; analysis up to 9.8 kB": the largest request of each
// kind per round.
std::string request_sizes_text(const json& sizes) {
  std::map<int, std::size_t> generation;
  std::size_t analysis = 0;
  for (const auto& r : sizes) {
    const std::string step = r.value("step", "");
    const std::size_t chars = r.value("chars", std::size_t{0});
    if (step.find("analyze") != std::string::npos) {
      analysis = std::max(analysis, chars);
    } else if (step.size() > 1 && step[0] == 'r' && std::isdigit(static_cast<unsigned char>(step[1]))) {
      auto& m = generation[std::atoi(step.c_str() + 1)];
      m = std::max(m, chars);
    }
  }
  if (generation.empty() && analysis == 0) return "none";
  const auto kb = [](std::size_t c) { return fmt::format("{:.1f} kB", c / 1000.0); };
  std::string out;
  for (const auto& [round, chars] : generation) out += fmt::format("{}r{} {}", out.empty() ? "generation " : ", ", round, kb(chars));
  if (analysis > 0) out += fmt::format("{}analysis up to {}", out.empty() ? "" : "; ", kb(analysis));
  return out;
}

std::string markdown_report(const json& s) {
  std::string out = fmt::format("# kforge run {}: `{}` on `{}`\n\n", s.value("run_id", 0),
                                std::filesystem::path(s.value("problem", "")).filename().string(), s.value("target", ""));
  out += fmt::format("**Result.** {}\n\n", s.value("verdict", ""));
  const json usage = s.value("usage", json::object());
  const json o = s.value("options", json::object());
  std::string stop = s.value("stop_reason", "");
  auto it = kStopReasons.find(stop);
  std::string overrides;
  const json set = o.value("overrides", json::object());
  for (const auto& [k, v] : set.items())
    overrides += fmt::format("{}`{}={}`", overrides.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : v.dump());
  const RunOptions run = options_from_json(o);
  const auto limit = [](double v, const std::string& text) { return v > 0 ? text : std::string("none"); };
  out += "| | |\n|---|---|\n";
  out += fmt::format("| Problem | `{}` |\n", s.value("problem", ""));
  out += fmt::format("| Size overrides (`--set`) | {} |\n", overrides.empty() ? "none (the file's sizes)" : overrides);
  out += fmt::format("| Target | `{}` on {} |\n", s.value("target", ""),
                     run.device.empty() ? "its default device" : "`" + run.device + "`");
  if (!run.transfer_from.empty()) out += fmt::format("| Ported from (`--transfer-from`) | `{}` |\n", run.transfer_from);
  out += fmt::format("| Model | `{}`{} |\n", s.value("llm", ""),
                     run.temperature ? fmt::format(", temperature {}", *run.temperature) : "");
  out += fmt::format("| Threads | {} |\n", run.threads > 0 ? std::to_string(run.threads) : "all available");
  out += fmt::format("| Seed | {} |\n", o.value("seed", json()).dump());
  out += fmt::format("| Precision | {} |\n", run.precision);
  out += fmt::format("| Search | {} rounds, {} sample(s) per round, up to {} fixes, patience {}, min gain {:.0f}%, "
                     "stop at {:.0f}% of speed of light |\n",
                     run.rounds, run.samples, run.max_fix, run.patience, 100 * run.min_gain, 100 * run.sol_stop);
  out += fmt::format("| Budgets | tokens {}, cost {}, time {} |\n",
                     limit(run.max_tokens, std::to_string(run.max_tokens)),
                     limit(run.max_cost_usd, fmt::format("${:.2f}", run.max_cost_usd)),
                     limit(run.time_limit_s, fmt::format("{:.0f} s", run.time_limit_s)));
  out += fmt::format("| Checks | {} trials, {} varied size(s), library calls {}, {} |\n", run.eval_trials, run.shapes,
                     run.kernels_only ? "none (`--kernels-only`)" : "as the target allows",
                     run.sandbox ? "sandboxed" : "not sandboxed (`--no-sandbox`)");
  if (run.compile_only || !run.timing)
    out += fmt::format("| Timing | none ({}) |\n",
                       run.compile_only ? "`--compile-only`: the target's interpreter" : "`--no-timing`");
  else
    out += fmt::format("| Timing | {} repetitions after {} warm-up, timeout {:.0f} s, torch.compile baseline {} |\n",
                       run.eval_reps, run.eval_warmup, run.eval_timeout_s, run.compile_baseline ? "on" : "off");
  out += fmt::format("| Status | {} |\n", s.value("status", ""));
  out += fmt::format("| Stopped because | {} |\n", it != kStopReasons.end() ? it->second : stop);
  out += fmt::format("| LLM calls | {} ({} input / {} output tokens, ${:.4f}) |\n", usage.value("calls", 0),
                     usage.value("input_tokens", 0), usage.value("output_tokens", 0), usage.value("cost_usd", 0.0));
  out += fmt::format("| Request sizes | {} |\n", request_sizes_text(s.value("request_sizes", json::array())));
  for (const auto& p : s.value("profiles", json::array()))
    if (const json ncu = p.value("ncu", json::object()); ncu.value("status", "ok") != "ok")
      out += fmt::format("| Profile {} | no Nsight Compute metrics: {} |\n", p.value("step", ""), ncu.value("note", ""));
  out += fmt::format("| Evaluations | {} |\n\n", s.value("evaluations", 0));

  out += "## Speedup over iterations\n\n";
  out += "Times in milliseconds: the median (25th-75th percentile) of the candidate's own evaluation.\n\n";
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
                       r.value("step", json()).is_string() ? r["step"].get<std::string>() : "none", ms_with_spread(r),
                       times(sp), bar);
  }
  out += "\n## Candidates\n\nvs eager: the candidate's own evaluation; vs best: timed against the best of its time in "
         "one interleaved measurement. Both with 95% confidence intervals.\n\n"
         "| Round | Candidate | Outcome | Time (ms) | vs eager | vs best | Decision |\n|---|---|---|---|---|---|---|\n";
  for (const auto& c : s.value("candidates", json::array())) {
    std::string outcome = c.value("summary", "");
    if (outcome.empty()) outcome = c.value("status", "correct");
    outcome = cell(outcome);  // it quotes the candidate's error
    for (const auto& f : c.value("flags", json::array())) outcome += " [" + f.get<std::string>() + "]";
    std::string decision = c.value("decision", "");
    if (!decision.empty()) decision += ": " + c.value("reason", "");
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", c.value("round", 0), c.value("step", ""), outcome,
                       ms_with_spread(c), ratio(c.value("vs_eager", json())),
                       ratio(c.value("vs_best", json())), plain_cell(decision, 160));
  }
  const json advice = s.value("advice", json::array());
  if (!advice.empty()) {
    out += "\n## Which advice paid off\n\nEach recommendation of the performance analysis, the candidates generated "
           "from it (those that name recommendations are linked to the ones they name) and what was decided.\n\n"
           "| Round | # | Recommendation | Tried by | Paid off |\n|---|---|---|---|---|\n";
    for (const auto& a : advice) {
      std::string tried;
      for (const auto& t : a.value("tried_by", json::array()))
        tried += fmt::format("{}{} ({}{})", tried.empty() ? "" : "; ", t.value("step", ""), t.value("decision", ""),
                             t.value("vs_best", json()).is_object() ? ", " + ratio(t["vs_best"]) + " vs best" : "");
      out += fmt::format("| {} | {} | {} | {} | {} |\n", a.value("round", 0), a.value("rank", 0),
                         cell(a.value("text", ""), 200), tried.empty() ? "not tried" : plain_cell(tried, 200),
                         a.value("paid_off", false) ? "yes" : "no");
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
    std::string what = c.value("summary", "");
    if (what.empty()) what = c.value("status", "correct");
    out += fmt::format("  {:<12} {:<22} {}", c.value("step", ""), ratio(c.value("vs_eager", json())) + " vs eager", what);
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

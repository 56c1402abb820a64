#include "report/html_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/library_share.h"
#include "eval/timing_stats.h"
#include "report/cells.h"
#include "report/metrics.h"
#include "util/markup.h"

namespace kforge::report {

using json = nlohmann::json;

namespace {

std::string num(const json& v, const char* spec = "{:.4g}") {
  return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>()) : "-";
}

// JSON inside <script>: "</" would end the element early, so it is written as "<\/" (same string).
std::string script_json(const json& doc) {
  std::string s = doc.dump();
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string metrics_table(const json& m) {
  std::string t = "<table><thead><tr><th>metric</th>";
  for (const auto& c : baseline_columns()) t += fmt::format("<th>{}</th>", c.title);
  t += "</tr></thead><tbody>";
  auto measured = [&](const char* b) { return m["baselines_measured"].value(b, false); };
  for (const char* which : {"all_problems", "correct_only"}) {
    t += std::string(which) == "all_problems" ? "<tr><td>geomean speedup, all problems <small>(failed = 1.0)</small></td>"
                                              : "<tr><td>geomean speedup, correct problems only</td>";
    for (const auto& c : baseline_columns())
      t += fmt::format("<td>{}</td>", measured(c.key) ? format_speedup(m["geomean_speedup"][c.key][which]) : "not measured");
    t += "</tr>";
  }
  t += "<tr><td>spread of the per-problem speedups <small>(correct problems)</small></td>";
  for (const auto& c : baseline_columns())
    t += fmt::format("<td>{}</td>", measured(c.key) ? format_quartiles(m["speedup_quartiles"][c.key]) : "not measured");
  t += "</tr>";
  for (double p : reported_p_values()) {
    std::string key = fmt::format("{:g}", p);
    t += fmt::format("<tr><td>fast_{} <small>(correct and &gt; {}x faster, share of all problems)</small></td>", key, key);
    for (const auto& c : baseline_columns())
      t += fmt::format("<td>{}</td>", measured(c.key) ? format_percent(m["fast_p"][c.key][key]) : "not measured");
    t += "</tr>";
  }
  return t + "</tbody></table>";
}

// A time cell: the median, and its 25th-75th percentile on a line of its own.
std::string time_cell(const json& problem, const char* which) {
  std::string text = format_time_with_spread(problem, which);
  auto range = text.find(" (");
  if (range == std::string::npos) return text;
  return text.substr(0, range) + "<br><small>" + text.substr(range + 1) + "</small>";
}

std::string problems_table(const json& problems) {
  std::string t = "<table class=\"problems\"><thead><tr><th>problem</th><th>status</th><th>vs faster baseline</th><th>vs eager</th>"
                  "<th>vs compile</th><th>candidate ms</th><th>eager ms</th><th>compile ms</th><th>timing spread</th>"
                  "<th>% of SOL</th><th>wall s</th><th>library calls</th><th>note</th></tr></thead><tbody>";
  for (const auto& p : problems) {
    const bool unstable = p.value("unstable", false);
    t += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td{}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        p.value("correct", false) ? "ok" : "failed", escape_markup(p.value("name", "")),
        escape_markup(p.value("status", "")), format_problem_speedup(p, "faster"),
        format_problem_speedup(p, "eager"), format_problem_speedup(p, "compile"),
        time_cell(p, "candidate"), time_cell(p, "eager"), time_cell(p, "compile"), unstable ? " class=\"unstable\"" : "", format_stability(p),
        num(p.value("sol_pct", json()), "{:.3g}"), num(p.value("wall_seconds", json()), "{:.1f}"),
        escape_markup(describe_library_calls(p.value("library_calls", json::array()), p.value("library_share", json()))),
        escape_markup(p.value("message", "")));
  }
  return t + "</tbody></table>";
}

// Draws the charts from the embedded data and records what each one laid out. Speedups sit on a
// log axis (0.5x and 2x equally far from 1x); a problem without a correct candidate is marked
// with a red cross at the bottom of the axis rather than left out. Every colour means one thing
// in every chart and legend.
const char* const kChartScript = R"js(
(function () {
  const data = JSON.parse(document.getElementById('bench-data').textContent);
  const problems = data.problems;
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  const colour = {faster: '#2ca02c', eager: '#1f77b4', compile: '#ff7f0e', slower: '#7f7f7f', failed: '#d62728',
                  sol: '#9467bd', parity: '#444444'};
  // One per problem in the round chart; no red or green, which mean failed and faster elsewhere.
  const lineColours = ['#1f77b4', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf',
                       '#393b79', '#637939'];
  // Speedup against a baseline as the reports define it; null: no correct candidate, or not measured.
  function speedup(p, base) {
    if (!p.correct) return null;
    const e = p.speedup_vs_eager ?? null, c = p.speedup_vs_compile ?? null;
    if (base === 'eager') return e;
    if (base === 'compile') return c;
    return (e !== null && c !== null) ? Math.min(e, c) : e;
  }
  // Points laid out with a value: Chart.js also places an element for a null value of a bar.
  function record(id, chart) {
    const value = v => (v !== null && typeof v === 'object') ? v.y : v;
    const counts = chart.data.datasets.map((ds, i) => chart.getDatasetMeta(i).data.filter((el, j) =>
      !el.skip && Number.isFinite(el.x) && Number.isFinite(el.y) && value(ds.data[j]) != null).length);
    const figure = document.getElementById(id);
    figure.dataset.pointsPerSeries = JSON.stringify(counts);
    // The axes' kinds and the legend's colours as drawn, for the report's own test to check.
    figure.dataset.axes = JSON.stringify(Object.fromEntries(Object.values(chart.scales).map(s => [s.id, s.type])));
    figure.dataset.legend = JSON.stringify(chart.legend.legendItems.map(item => [item.text, item.fillStyle]));
  }
  function make(id, config) {
    const figure = document.getElementById(id);
    if (!figure) return;  // not part of this report (the round chart of a --candidates bench)
    record(id, new Chart(figure.querySelector('canvas'), config));
  }
  const nice = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
  const isNice = v => nice.some(t => Math.abs(t - v) < 1e-9 * t);
  // Labels and grid lines at 1-2-5 steps only; 1x, where PyTorch stands, drawn darker.
  function logAxis(title, lo, hi) {
    return {type: 'logarithmic', min: lo, max: hi, title: {display: true, text: title},
            ticks: {autoSkip: false, callback: v => isNice(v) ? v + 'x' : ''},
            grid: {color: c => !c.tick ? 'transparent' : c.tick.value === 1 ? '#999' : isNice(c.tick.value) ? '#e4e4e4'
                                                                                     : 'transparent'}};
  }
  const measured = data.metrics.baselines_measured;
  // Without torch.compile figures the faster baseline is eager itself: one curve says it all.
  const baselines = [['faster', 'the faster of the two'], ['eager', 'eager PyTorch'], ['compile', 'torch.compile']]
    .filter(([b]) => measured[b] && (b !== 'faster' || measured.compile));
  const n = problems.length;
  const speeds = problems.flatMap(p => ['eager', 'compile'].map(b => speedup(p, b))).filter(v => v > 0);
  const lo = Math.min(0.5, ...speeds) / 1.6, hi = Math.max(2, ...speeds) * 1.6;

  // fast_p over p: at each correct problem's speedup s, the share of all problems at least that
  // fast; it starts at the share of correct problems (fast_0) on the left edge.
  make('chart-fastp', {
    type: 'line',
    data: {datasets: baselines.map(([b, label]) => {
      const s = problems.map(p => speedup(p, b)).filter(v => v > 0).sort((x, y) => x - y);
      return {label: 'vs ' + label, borderColor: colour[b], backgroundColor: colour[b], stepped: 'after',
              data: [{x: lo, y: s.length / n}].concat(s.map(v => ({x: v, y: s.filter(w => w >= v).length / n})))};
    })},
    options: {parsing: false, scales: {x: logAxis('p (speedup threshold, x, log scale)', lo, hi),
                                       y: {min: 0, max: 1, title: {display: true, text: 'fast_p (share of all problems)'}}}}
  });

  const fasterOf = p => speedup(p, 'faster');
  const sorted = problems.slice().sort((a, b) => (fasterOf(a) ?? 0) - (fasterOf(b) ?? 0));
  const floor = lo * 1.25;  // where a failure's cross sits
  make('chart-speedups', {
    type: 'bar',
    data: {labels: sorted.map(p => p.name), datasets: [
      // Green only where the speed claim's intervals say faster (eval/speed_claim.h), not by the point alone.
      {label: 'faster than PyTorch', backgroundColor: colour.faster, grouped: false,
       data: sorted.map(p => p.speed_verdict === 'faster' && fasterOf(p) !== null ? fasterOf(p) : null)},
      {label: 'correct, not faster', backgroundColor: colour.slower, grouped: false,
       data: sorted.map(p => fasterOf(p) !== null && p.speed_verdict !== 'faster' ? fasterOf(p) : null)},
      {type: 'line', label: 'no correct candidate', showLine: false, pointStyle: 'crossRot', pointRadius: 9,
       pointBorderWidth: 3, borderColor: colour.failed, backgroundColor: colour.failed,
       data: sorted.map(p => p.correct ? null : floor)},
      {type: 'line', label: '1x (as fast as PyTorch)', borderColor: colour.parity, backgroundColor: colour.parity,
       borderDash: [6, 4], borderWidth: 1, pointRadius: 0, data: sorted.map(() => 1)}]},
    options: {scales: {y: logAxis('speedup vs the faster baseline (x, log scale)', lo, hi)}}
  });

  const rounds = Math.max(1, ...problems.map(p => (p.speedup_by_round || []).length));
  make('chart-iterations', {
    type: 'line',
    data: {labels: Array.from({length: rounds}, (_, r) => 'round ' + r),
           datasets: problems.map((p, i) => ({
             label: p.name, borderColor: lineColours[i % lineColours.length],
             backgroundColor: lineColours[i % lineColours.length],
             data: (p.speedup_by_round || []).map(v => v ?? null)}))},
    options: {scales: {y: logAxis('best speedup vs eager (x, log scale)', lo, hi)}}
  });

  const withSol = problems.filter(p => p.correct && p.sol_pct != null);
  make('chart-sol', {
    type: 'bar',
    data: {labels: withSol.map(p => p.name),
           datasets: [{label: '% of speed-of-light', data: withSol.map(p => p.sol_pct), backgroundColor: colour.sol}]},
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: '% of speed-of-light'}}}}
  });
  if (!withSol.length) document.querySelector('#chart-sol figcaption').textContent +=
    ' No problem of this bench has a speed-of-light figure.';
  document.body.dataset.chartsDrawn = document.querySelectorAll('figure[data-points-per-series]').length;
})();
)js";

const char* const kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1280px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
td:last-child { word-break: break-word; min-width: 12em; max-width: 28em; }
table.problems { font-size: 0.82em; }
td small { white-space: nowrap; color: #555; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
tr.failed td:nth-child(2) { color: #b00; }
td.unstable { color: #b00; font-weight: bold; }
p.warning { border-left: 4px solid #d62728; background: #fdecea; padding: 0.5em 1em; }
figure { margin: 1.5em 0; }
figure .plot { position: relative; height: 320px; }
figcaption { color: #555; font-size: 0.9em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; }
)css";

}  // namespace

std::string html_report(const json& doc, const std::string& chart_js_source) {
  const json& b = doc.at("bench");
  const json& m = doc.at("metrics");
  std::string title = fmt::format("kforge bench {}: {}", b.value("id", 0), b.value("suite", ""));
  std::string settings = fmt::format(
      "<dl><dt>mode</dt><dd>{}</dd><dt>target</dt><dd>{} on {}</dd><dt>precision policy</dt><dd>{}</dd>"
      "<dt>status</dt><dd>{} ({} of {} problems done)</dd><dt>wall time</dt><dd>{} s</dd>",
      escape_markup(b.value("mode", "") == "llm" ? "llm: " + b.value("llm", "")
                                               : "candidates from " + b.value("candidates_dir", "")),
      escape_markup(b.value("target", "")), escape_markup(b.value("devices", json::array()).dump()),
      escape_markup(b.value("precision", "")), escape_markup(b.value("status", "")), m.value("done", 0),
      m.value("problems_in_suite", 0), num(b.value("wall_seconds", json()), "{:.1f}"));
  settings += fmt::format("<dt>correct</dt><dd>{} of {} ({})</dd>", m.value("correct", 0), m.value("problems", 0),
                          format_percent(m.value("correctness_rate", json())));
  settings += fmt::format("<dt>median speed-of-light</dt><dd>{}</dd>",
                          m["median_sol_pct"].is_number() ? fmt::format("{:.3g}%", m["median_sol_pct"].get<double>())
                                                          : std::string("no SOL figures"));
  if (m.contains("llm")) {
    const json& l = m["llm"];
    settings += fmt::format("<dt>LLM</dt><dd>{} calls, {} tokens, {} USD; per solved problem {} tokens, {} USD</dd>",
                            l.value("calls", 0), l.value("input_tokens", 0) + l.value("output_tokens", 0),
                            num(l.value("cost_usd", json()), "{:.4f}"),
                            num(l.value("tokens_per_solved", json()), "{:.0f}"),
                            num(l.value("cost_usd_per_solved", json()), "{:.4f}"));
  }
  const json env = b.value("environment", json());
  settings += fmt::format("<dt>environment</dt><dd>{}</dd>", escape_markup(format_environment(env)));
  if (env.is_object() && env.contains("command_line"))
    settings += fmt::format("<dt>command</dt><dd><code>{}</code></dd>",
                            escape_markup(fmt::format("{}", fmt::join(env["command_line"].get<std::vector<std::string>>(), " "))));
  settings += "</dl>";
  if (auto w = unstable_warning(m); !w.empty()) settings += fmt::format("<p class=\"warning\">Warning: {}</p>", escape_markup(w));

  auto figure = [](const char* id, const char* caption) {
    return fmt::format("<figure id=\"{}\"><div class=\"plot\"><canvas></canvas></div><figcaption>{}</figcaption></figure>",
                       id, caption);
  };
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += fmt::format("<title>{}</title><style>{}</style></head><body>\n", escape_markup(title), kStyle);
  out += fmt::format("<h1>{}</h1>\n{}\n<h2>Results</h2>\n{}\n", escape_markup(title), settings, metrics_table(m));
  out += "<h2>Charts</h2>\n";
  out += figure("chart-fastp", "fast_p over p: share of all problems that are correct and faster than the baseline by "
                               "more than p; one point per correct problem.");
  out += figure("chart-speedups", "Per-problem speedup against the faster of eager and torch.compile, sorted; a red "
                                  "cross marks a problem without a correct candidate.");
  // A --candidates bench evaluates one file per problem: there are no rounds to chart.
  if (b.value("mode", "") == "llm")
    out += figure("chart-iterations", "Best speedup against eager after each round, one line per problem; a line "
                                      "starts at the first round with a correct candidate.");
  out += figure("chart-sol", "Percent of speed-of-light of each correct problem that has the figure.");
  out += fmt::format("\n<h2>Problems</h2>\n{}\n", problems_table(doc.at("problems")));
  out += fmt::format("<p><small>{} Times in milliseconds, median (25th-75th percentile). Timing spread: the "
                     "largest interquartile range of the problem's timed functions relative to its median; unstable "
                     "over {:.0f}%.</small></p>\n",
                     escape_markup(speedup_rule_note()), 100 * kUnstableIqrRel);
  out += fmt::format("<script type=\"application/json\" id=\"bench-data\">{}</script>\n", script_json(doc));
  out += "<script>" + chart_js_source + "</script>\n";
  out += fmt::format("<script>{}</script>\n</body></html>\n", kChartScript);
  return out;
}

}  // namespace kforge::report

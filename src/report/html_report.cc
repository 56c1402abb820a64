#include "report/html_report.h"

#include <fmt/format.h>

#include "report/markdown_report.h"
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
  std::string t = "<table><thead><tr><th>metric</th><th>vs eager</th><th>vs torch.compile</th>"
                  "<th>vs faster of the two</th></tr></thead><tbody>";
  auto measured = [&](const char* b) { return m["baselines_measured"].value(b, false); };
  for (double p : reported_p_values()) {
    std::string key = fmt::format("{:g}", p);
    t += fmt::format("<tr><td>fast_{} <small>(correct and &gt; {}x faster, share of all problems)</small></td>", key, key);
    for (const char* b : {"eager", "compile", "faster"})
      t += fmt::format("<td>{}</td>", measured(b) ? format_percent(m["fast_p"][b][key]) : "not measured");
    t += "</tr>";
  }
  for (const char* which : {"all_problems", "correct_only"}) {
    t += std::string(which) == "all_problems" ? "<tr><td>geomean speedup, all problems <small>(failed = 1.0)</small></td>"
                                              : "<tr><td>geomean speedup, correct problems only</td>";
    for (const char* b : {"eager", "compile", "faster"})
      t += fmt::format("<td>{}</td>", measured(b) ? format_speedup(m["geomean_speedup"][b][which]) : "not measured");
    t += "</tr>";
  }
  return t + "</tbody></table>";
}

std::string problems_table(const json& problems) {
  std::string t = "<table><thead><tr><th>problem</th><th>status</th><th>candidate ms</th><th>eager ms</th>"
                  "<th>compile ms</th><th>vs eager</th><th>vs compile</th><th>% of SOL</th><th>wall s</th>"
                  "<th>note</th></tr></thead><tbody>";
  for (const auto& p : problems) {
    t += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>",
        p.value("correct", false) ? "ok" : "failed", escape_markup(p.value("name", "")),
        escape_markup(p.value("status", "")), num(p.value("candidate_ms", json())), num(p.value("eager_ms", json())),
        num(p.value("compile_ms", json())), format_speedup(p.value("speedup_vs_eager", json())),
        format_speedup(p.value("speedup_vs_compile", json())), num(p.value("sol_pct", json()), "{:.3g}"),
        num(p.value("wall_seconds", json()), "{:.1f}"), escape_markup(p.value("message", "")));
  }
  return t + "</tbody></table>";
}

// Draws the four charts from the embedded data and records what each one laid out.
const char* const kChartScript = R"js(
(function () {
  const data = JSON.parse(document.getElementById('bench-data').textContent);
  const problems = data.problems;
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                  '#bcbd22', '#17becf'];
  // Speedup against a baseline as the reports define it; 0 stands for "no correct candidate".
  function speedup(p, base) {
    if (!p.correct) return 0;
    const e = p.speedup_vs_eager, c = p.speedup_vs_compile;
    if (base === 'eager') return e ?? 0;
    if (base === 'compile') return c ?? 0;
    return (e != null && c != null) ? Math.min(e, c) : (e ?? 0);
  }
  function record(id, chart) {
    const counts = chart.data.datasets.map((_, i) =>
      chart.getDatasetMeta(i).data.filter(el => !el.skip && Number.isFinite(el.x) && Number.isFinite(el.y)).length);
    document.getElementById(id).dataset.pointsPerSeries = JSON.stringify(counts);
  }
  function make(id, config) {
    const chart = new Chart(document.querySelector('#' + id + ' canvas'), config);
    record(id, chart);
  }
  const measured = data.metrics.baselines_measured;
  // Without torch.compile figures the faster baseline is eager itself: one curve says it all.
  const baselines = [['eager', 'eager PyTorch'], ['compile', 'torch.compile'], ['faster', 'faster of the two']]
    .filter(([b]) => measured[b] && (b !== 'faster' || measured.compile));
  const n = problems.length;

  // fast_p over p: at each problem's speedup s, the share of problems at least that fast; between
  // two problems' speedups the curve holds the value of the next one (fast_p counts "> p").
  make('chart-fastp', {
    type: 'line',
    data: {datasets: baselines.map(([b, label], i) => {
      const s = problems.map(p => speedup(p, b)).sort((x, y) => x - y);
      return {label: 'vs ' + label, borderColor: colors[i], backgroundColor: colors[i], stepped: 'after',
              data: s.map(v => ({x: v, y: s.filter(w => w >= v && w > 0).length / n}))};
    })},
    options: {parsing: false, scales: {x: {type: 'linear', title: {display: true, text: 'p (speedup threshold, x)'}},
                                       y: {min: 0, max: 1, title: {display: true, text: 'fast_p (share of problems)'}}}}
  });

  const sorted = problems.slice().sort((a, b) => speedup(a, 'faster') - speedup(b, 'faster'));
  make('chart-speedups', {
    type: 'bar',
    data: {labels: sorted.map(p => p.name), datasets: [{
      label: 'speedup vs the faster baseline (x); 0 = failed',
      data: sorted.map(p => speedup(p, 'faster')),
      backgroundColor: sorted.map(p => !p.correct ? '#d62728' : speedup(p, 'faster') > 1 ? '#2ca02c' : '#7f7f7f')}]},
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: 'speedup (x)'}}}}
  });

  const rounds = Math.max(1, ...problems.map(p => (p.speedup_by_round || []).length));
  make('chart-iterations', {
    type: 'line',
    data: {labels: Array.from({length: rounds}, (_, r) => 'round ' + r),
           datasets: problems.map((p, i) => ({
             label: p.name, borderColor: colors[i % colors.length], backgroundColor: colors[i % colors.length],
             data: (p.speedup_by_round && p.speedup_by_round.length ? p.speedup_by_round : [null])
               .map(v => v ?? 0)}))},
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: 'best speedup vs eager (x); 0 = none correct yet'}}}}
  });

  const withSol = problems.filter(p => p.correct && p.sol_pct != null);
  make('chart-sol', {
    type: 'bar',
    data: {labels: withSol.map(p => p.name),
           datasets: [{label: '% of speed-of-light', data: withSol.map(p => p.sol_pct), backgroundColor: colors[4]}]},
    options: {scales: {y: {beginAtZero: true, title: {display: true, text: '% of speed-of-light'}}}}
  });
  if (!withSol.length) document.querySelector('#chart-sol figcaption').textContent +=
    ' No problem of this bench has a speed-of-light figure.';
  document.body.dataset.chartsDrawn = document.querySelectorAll('figure[data-points-per-series]').length;
})();
)js";

const char* const kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
td:last-child { word-break: break-word; max-width: 24em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
tr.failed td:nth-child(2) { color: #b00; }
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
  settings += "</dl>";

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
                               "more than p; one point per problem.");
  out += figure("chart-speedups", "Per-problem speedup against the faster of eager and torch.compile, sorted.");
  out += figure("chart-iterations", "Best speedup against eager after each round, one line per problem.");
  out += figure("chart-sol", "Percent of speed-of-light of each correct problem that has the figure.");
  out += fmt::format("\n<h2>Problems</h2>\n{}\n", problems_table(doc.at("problems")));
  out += "<p><small>Speedups are baseline median time / candidate median time from interleaved measurements; times "
         "in milliseconds.</small></p>\n";
  out += fmt::format("<script type=\"application/json\" id=\"bench-data\">{}</script>\n", script_json(doc));
  out += "<script>" + chart_js_source + "</script>\n";
  out += fmt::format("<script>{}</script>\n</body></html>\n", kChartScript);
  return out;
}

}  // namespace kforge::report

// `kforge report RUN_OR_BENCH`: the trajectory of a run, or the metrics and charts of a bench
// (`bench-N`), finished, interrupted or killed, from the store.
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/report_files.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "loop/run_summary.h"
#include "report/html_report.h"
#include "report/markdown_report.h"
#include "store/store.h"
#include "util/errors.h"

namespace kforge {

namespace {

struct ReportArgs {
  std::string id;
  std::string format;  // text (runs only), md, json, html (benches only)
  bool json = false, markdown = false;
  std::string db, out;
};

// "12" or "run-12" is a run, "bench-3" a bench.
std::pair<bool, std::int64_t> parse_id(const std::string& s) {
  static const std::regex pattern(R"((run-|bench-)?([0-9]+))");
  std::smatch m;
  if (!std::regex_match(s, m, pattern))
    throw InputError(fmt::format("'{}' is neither a run (N or run-N) nor a bench (bench-N)", s));
  return {m[1] == "bench-", std::stoll(m[2])};
}

std::string render(const ReportArgs& a, const Store& store, const std::filesystem::path& db) {
  auto [is_bench, id] = parse_id(a.id);
  std::string format = a.format.empty() ? (a.json ? "json" : a.markdown ? "md" : is_bench ? "md" : "text") : a.format;
  if (is_bench) {
    if (!store.bench(id)) throw InputError(fmt::format("no bench {} in {}", id, db.string()));
    auto doc = bench::build_bench_report(store, id);
    if (format == "json") return doc.dump(2) + "\n";
    if (format == "html") return report::html_report(doc, load_chart_js());
    if (format == "md") return report::markdown_report(doc);
    throw InputError(fmt::format("--format {} is not available for a bench (md, html, json)", format));
  }
  if (!store.run(id)) throw InputError(fmt::format("no run {} in {}", id, db.string()));
  auto summary = loop::build_summary(store, id);
  if (format == "json") return summary.dump(2) + "\n";
  if (format == "md") return loop::markdown_report(summary);
  if (format == "text") return loop::text_report(summary);
  throw InputError(fmt::format("--format {} is not available for a run (text, md, json; HTML is for benches)", format));
}

int run_report(const ReportArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  std::filesystem::path db = store_path(a.db, config);
  Store store(db);
  std::string text = render(a, store, db);
  if (a.out.empty()) {
    fmt::print("{}", text);
  } else {
    std::ofstream out(a.out);
    if (!(out << text)) throw InputError(fmt::format("cannot write {}", a.out));
  }
  return kExitOk;
}

}  // namespace

void register_report_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Print the report of a `kforge run` (N) or a `kforge bench` (bench-N)");
  cmd->add_option("id", a->id, "Run id (N or run-N) or bench id (bench-N), as printed by `kforge run` / `kforge bench`")->required();
  auto* f = cmd->add_option("--format", a->format, "text (runs), md, json or html (benches)")
                ->check(CLI::IsMember({"text", "md", "json", "html"}));
  auto* j = cmd->add_flag("--json", a->json, "Same as --format json")->excludes(f);
  cmd->add_flag("--markdown", a->markdown, "Same as --format md")->excludes(j)->excludes(f);
  cmd->add_option("-o,--out", a->out, "Write the report to FILE instead of standard output");
  cmd->add_option("--db", a->db, "SQLite store (default ~/.kforge/kforge.db)");
  cmd->callback([a, &global, exit_code] { *exit_code = run_report(*a, global); });
}

}  // namespace kforge

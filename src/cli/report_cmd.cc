// `kforge report RUN_OR_BENCH`: the trajectory of a run (with --full: every prompt, reply and
// candidate), or the metrics and charts of a bench (`bench-N`), finished, interrupted or killed,
// from the store.
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/clean_text.h"
#include "bench/bench_report.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/report_files.h"
#include "cli/result_output.h"
#include "cli/store_ids.h"
#include "cli/store_path.h"
#include "config/config.h"
#include "loop/run_summary.h"
#include "loop/run_transcript.h"
#include "report/html_report.h"
#include "report/markdown_report.h"
#include "store/store.h"
#include "util/errors.h"

namespace kforge {

namespace {

struct ReportArgs {
  std::string id;
  std::string format;  // text (runs only), md, json, html (benches only)
  bool markdown = false, full = false;
  // --json FILE; a bare --json (the older switch, same as --format json) is given with no FILE.
  std::string json;
  bool json_given = false;
  std::string db, out;
};

struct Rendered {
  nlohmann::json doc;  // the report as JSON
  std::string text;    // in the asked format
};

Rendered render(const ReportArgs& a, const std::string& format, const Store& store, const std::filesystem::path& db) {
  StoreId id = parse_store_id(a.id);
  if (id.kind == IdKind::kBench) {
    if (!store.bench(id.number)) throw InputError(fmt::format("no bench {} in {}", id.number, db.string()));
    if (a.full) throw InputError("--full is for runs (their prompts and candidates); a bench's runs have their own reports");
    auto doc = bench::build_bench_report(store, id.number);
    if (format == "json") return {doc, doc.dump(2) + "\n"};
    if (format == "html") return {doc, report::html_report(doc, load_chart_js())};
    if (format == "md") return {doc, report::markdown_report(doc)};
    throw InputError(fmt::format("--format {} is not available for a bench (md, html, json)", format));
  }
  if (!store.run(id.number)) throw InputError(fmt::format("no run {} in {}", id.number, db.string()));
  auto summary = loop::build_summary(store, id.number);
  nlohmann::json transcript = a.full ? loop::build_transcript(store, id.number) : nlohmann::json();
  if (a.full) summary["transcript"] = transcript;
  if (format == "json") return {summary, summary.dump(2) + "\n"};
  const std::string tail = a.full ? loop::transcript_markdown(transcript) : "";
  if (format == "md") return {summary, loop::markdown_report(summary) + tail};
  if (format == "text") return {summary, loop::text_report(summary) + tail};
  throw InputError(fmt::format("--format {} is not available for a run (text, md, json; HTML is for benches)", format));
}

int run_report(const ReportArgs& a, const GlobalOptions& global) {
  setup_logging(global);
  Config config = load_config(global.config_path);
  std::filesystem::path db = store_path(a.db, config);
  Store store(db);
  const bool bare_json = a.json_given && a.json.empty();
  if (bare_json) spdlog::warn("`--json` without a file is deprecated: use --format json, or --json FILE (`-`: standard output)");
  ResultOutput out{a.json};
  const bool bench = parse_store_id(a.id).kind == IdKind::kBench;
  std::string format = !a.format.empty() ? a.format : bare_json ? "json" : a.markdown ? "md" : bench ? "md" : "text";
  if (!a.format.empty() && (bare_json || a.markdown))
    throw InputError("give one of --format, --markdown and a bare --json");
  Rendered r = render(a, format, store, db);
  out.write_json(r.doc);
  if (!a.out.empty()) {
    std::ofstream file(a.out);
    if (!(file << r.text)) throw InputError(fmt::format("cannot write {}", a.out));
  } else if (!out.json_on_stdout()) {
    fmt::print("{}", terminal_text(r.text));  // reports quote candidates' errors, output and sources
  }
  return kExitOk;
}

}  // namespace

void register_report_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Print the report of a `kforge run` (N) or a `kforge bench` (bench-N)");
  cmd->add_option("id", a->id, "Run id (N or run-N) or bench id (bench-N), as printed by `kforge run` / `kforge bench`")->required();
  cmd->add_option("--format", a->format, "text (runs), md, json or html (benches)")
      ->check(CLI::IsMember({"text", "md", "json", "html"}));
  cmd->add_flag("--markdown", a->markdown, "Same as --format md");
  cmd->add_flag("--full", a->full, "Runs: also every prompt, reply and candidate, in order");
  auto* json = cmd->add_option("--json", a->json,
                  "Also write the report as JSON to FILE (`-`: standard output, which then carries the JSON alone); "
                  "a bare --json is the deprecated spelling of --format json")
      ->expected(0, 1)
      ->type_name("FILE");
  cmd->add_option("-o,--out", a->out, "Write the report to FILE instead of standard output");
  add_db_option(cmd, a->db);
  cmd->callback([a, json, &global, exit_code] {
    a->json_given = json->count() > 0;
    *exit_code = run_report(*a, global);
  });
}

}  // namespace kforge

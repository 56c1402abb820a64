#include "cli/report_files.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/html_report.h"
#include "report/markdown_report.h"
#include "util/errors.h"
#include "util/files.h"

namespace kforge {

namespace fs = std::filesystem;

std::string load_chart_js() {
  const char* from_env = std::getenv("KFORGE_CHARTJS");
  fs::path path = from_env && *from_env ? fs::path(from_env) : fs::path("/usr/share/javascript/chart.js/chart.min.js");
  if (!fs::is_regular_file(path))
    throw InputError(fmt::format("HTML reports need Chart.js ({} not found): install the Debian package "
                                 "libjs-chart.js, or set KFORGE_CHARTJS to a chart.min.js (UMD build)",
                                 path.string()));
  return read_file(path);
}

std::vector<std::string> write_bench_reports(const nlohmann::json& doc, const fs::path& out_dir) {
  fs::create_directories(out_dir);
  std::vector<std::string> written;
  auto write = [&](const char* name, const std::string& text) {
    fs::path p = out_dir / name;
    std::ofstream out(p);
    if (!(out << text)) throw InputError(fmt::format("cannot write {}", p.string()));
    written.push_back(p.string());
  };
  write("report.json", doc.dump(2) + "\n");
  write("report.md", report::markdown_report(doc));
  try {
    write("report.html", report::html_report(doc, load_chart_js()));
  } catch (const InputError& e) {
    spdlog::warn("no HTML report: {}", e.what());
  }
  return written;
}

}  // namespace kforge

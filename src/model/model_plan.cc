#include "model/model_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace kforge::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

json to_json(const ModelOptions& o) {
  return {{"model", o.model},         {"hf_config", o.hf_config}, {"sets", o.sets},       {"target", o.target},
          {"device", o.device},       {"llm", o.llm},         {"top", o.top},
          {"regions", o.regions},
          {"run_args", o.run_args},   {"threads", o.threads}, {"profile_reps", o.profile_reps},
          {"e2e_reps", o.e2e_reps},   {"e2e_compile", o.e2e_compile},
          {"db", o.db},               {"out_dir", o.out_dir}, {"python", o.python},
          {"executor", o.executor},   {"ray_address", o.ray_address}, {"jobs", o.jobs},
          {"budget_minutes", o.budget_minutes}, {"record_dir", o.record_dir},
          {"replay_by_position", o.replay_by_position}};
}

ModelOptions options_from_json(const json& j) {
  ModelOptions o;
  o.model = j.value("model", "");
  o.hf_config = j.value("hf_config", "");
  o.sets = j.value("sets", std::vector<std::string>{});
  o.target = j.value("target", "cpu");
  o.device = j.value("device", "");
  o.llm = j.value("llm", "");
  o.top = j.value("top", 3);
  o.regions = j.value("regions", std::vector<std::string>{});
  o.run_args = j.value("run_args", std::vector<std::string>{});
  o.threads = j.value("threads", 0);
  o.profile_reps = j.value("profile_reps", 10);
  o.e2e_reps = j.value("e2e_reps", 20);
  o.e2e_compile = j.value("e2e_compile", true);
  o.db = j.value("db", "");
  o.out_dir = j.value("out_dir", "");
  o.python = j.value("python", "");
  o.executor = j.value("executor", "local");
  o.ray_address = j.value("ray_address", "");
  o.jobs = j.value("jobs", 0);
  o.budget_minutes = j.value("budget_minutes", 0.0);
  o.record_dir = j.value("record_dir", "");
  o.replay_by_position = j.value("replay_by_position", false);
  return o;
}

namespace {
bool selected(const json& region, const std::vector<std::string>& selectors) {
  if (selectors.empty()) return true;
  return std::any_of(selectors.begin(), selectors.end(), [&](const std::string& s) {
    return s == region.value("name", "") || s == region.value("kind", "");
  });
}
}  // namespace

std::vector<json> top_regions(const json& analysis, int top, const std::vector<std::string>& selectors) {
  std::vector<json> out;
  for (const auto& r : analysis.value("regions", json::array())) {
    if (static_cast<int>(out.size()) >= top) break;
    if (r.contains("problem") && !r.contains("skipped") && selected(r, selectors)) out.push_back(r);
  }
  return out;
}

std::vector<std::string> unmatched_selectors(const json& analysis, const std::vector<std::string>& selectors) {
  std::vector<std::string> out;
  const json regions = analysis.value("regions", json::array());
  for (const auto& s : selectors) {
    if (std::none_of(regions.begin(), regions.end(), [&](const json& r) { return selected(r, {s}); })) out.push_back(s);
  }
  return out;
}

std::string region_stem(const json& region) {
  const json instances = region.value("instances", json::array());
  if (instances.empty() || !instances[0].is_array() || instances[0].empty()) return region.at("name").get<std::string>();
  std::string name;
  for (const auto& module : instances[0]) name += (name.empty() ? "" : "+") + module.get<std::string>();
  return name.empty() ? "model" : name;  // the region is the model itself
}

std::string transcript_name(const json& region) { return region_stem(region) + ".jsonl"; }

std::string region_llm(const std::string& llm, const json& region) {
  constexpr std::string_view kReplay = "replay:";
  constexpr std::string_view kManual = "manual:";
  // Each region's run answers in a folder of its own: runs in progress at once in one folder would
  // number their requests alike and overwrite each other's request-0001.
  if (llm.rfind(kManual, 0) == 0) return std::string(kManual) + (fs::path(llm.substr(kManual.size())) / region_stem(region)).string();
  if (llm.rfind(kReplay, 0) != 0) return llm;
  const fs::path path = llm.substr(kReplay.size());
  std::error_code ec;
  return fs::is_directory(path, ec) ? std::string(kReplay) + (path / transcript_name(region)).string() : llm;
}

std::vector<std::string> run_argv(const std::string& kforge, const ModelOptions& o, const json& region,
                                  const fs::path& run_dir, std::int64_t resume_run) {
  const std::string llm = region_llm(o.llm, region);
  std::vector<std::string> argv = {kforge, "run"};
  if (resume_run > 0) {
    argv.insert(argv.end(), {"--resume", std::to_string(resume_run), "--llm", llm, "--json", (run_dir / "run.json").string()});
  } else {
    argv.insert(argv.end(), {region.at("problem").get<std::string>(), "--target", o.target, "--llm", llm, "--out",
                             run_dir.string(), "--json", (run_dir / "run.json").string()});
    if (!o.python.empty()) argv.insert(argv.end(), {"--python", o.python});  // a resumed run keeps its own
    if (!o.device.empty()) argv.insert(argv.end(), {"--device", o.device});
    if (o.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.threads)});
    argv.insert(argv.end(), o.run_args.begin(), o.run_args.end());
    if (o.replay_by_position) argv.push_back("--replay-by-position");  // a resumed run keeps its own
  }
  if (!o.record_dir.empty()) argv.insert(argv.end(), {"--record", (fs::path(o.record_dir) / transcript_name(region)).string()});
  if (!o.db.empty()) argv.insert(argv.end(), {"--db", o.db});
  return argv;
}

json kernel_entry(const json& s) {
  json k = {{"run", s.value("run_id", 0)}, {"status", s.value("status", "")}};
  if (s.contains("stop_reason") && s["stop_reason"].is_string()) k["stop_reason"] = s["stop_reason"];
  const json best = s.value("best", json());
  if (s.contains("best_file") && best.is_object()) {
    k["file"] = s["best_file"];
    k["speedup"] = best.value("speedup_vs_eager", json());
  }
  return k;
}

std::vector<std::string> with_time_limit(std::vector<std::string> argv, double seconds) {
  double limit = std::ceil(std::max(1.0, seconds));
  std::vector<std::string> out;
  const std::string eq = "--time-limit=";
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string value;
    if (argv[i] == "--time-limit" && i + 1 < argv.size()) value = argv[++i];
    else if (argv[i].rfind(eq, 0) == 0) value = argv[i].substr(eq.size());
    else {
      out.push_back(argv[i]);
      continue;
    }
    try {
      const double given = std::stod(value);
      if (given > 0) limit = std::min(limit, given);
    } catch (const std::exception&) {
      // Not a number: `kforge run` would have refused it; the budget's limit stands.
    }
  }
  out.insert(out.end(), {"--time-limit", fmt::format("{}", limit)});
  return out;
}

bool has_flag(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

std::int64_t run_id_in_log(const std::string& log) {
  const std::string mark = "(resume with `kforge run --resume ";
  const auto at = log.rfind(mark);
  if (at == std::string::npos) return 0;
  std::int64_t id = 0;
  for (std::size_t i = at + mark.size(); i < log.size() && std::isdigit(static_cast<unsigned char>(log[i])); ++i)
    id = 10 * id + (log[i] - '0');
  return id;
}

std::string error_line_in_log(const std::string& log) {
  std::size_t end = log.size();
  while (end > 0) {
    std::size_t begin = log.rfind('\n', end - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    std::string line = log.substr(begin, end - begin);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.rfind("kforge: ", 0) == 0 || line.find("error") != std::string::npos || line.find("Error") != std::string::npos)
      return line.size() > 300 ? line.substr(0, 300) + "..." : line;
    if (begin == 0) break;
    end = begin - 1;
  }
  return "";
}

json skipped_for_budget(double budget_minutes) {
  return {{"status", "skipped"},
          {"reason", fmt::format("budget: the loop's {:g} minute(s) (--budget-minutes) were used up before this region started",
                                 budget_minutes)}};
}

bool run_done(const json& kernel) { return kernel.is_object() && kernel.value("status", "") == "finished"; }

bool run_resumable(const json& kernel) {
  // Stopped by the user, or by a model that did not answer (an API error, or `manual:` waiting for
  // a reply): the run goes on from where it stopped, so the model waits for it rather than finish
  // without it.
  return kernel.is_object() && (kernel.value("status", "") == "interrupted" || kernel.value("stop_reason", "") == "llm_error");
}

fs::path next_model_dir(const fs::path& base) {
  for (int n = 1;; ++n) {
    fs::path dir = base / fmt::format("model-{}", n);
    if (!fs::exists(dir)) return dir;
  }
}

}  // namespace kforge::model

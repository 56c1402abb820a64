#include "model/model_plan.h"

#include <fmt/format.h>

namespace kforge::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

json to_json(const ModelOptions& o) {
  return {{"model", o.model},         {"hf_config", o.hf_config}, {"sets", o.sets},       {"target", o.target},
          {"device", o.device},       {"llm", o.llm},         {"top", o.top},
          {"run_args", o.run_args},   {"threads", o.threads}, {"profile_reps", o.profile_reps},
          {"e2e_reps", o.e2e_reps},   {"e2e_compile", o.e2e_compile},
          {"db", o.db},               {"out_dir", o.out_dir}, {"python", o.python}};
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
  o.run_args = j.value("run_args", std::vector<std::string>{});
  o.threads = j.value("threads", 0);
  o.profile_reps = j.value("profile_reps", 10);
  o.e2e_reps = j.value("e2e_reps", 20);
  o.e2e_compile = j.value("e2e_compile", true);
  o.db = j.value("db", "");
  o.out_dir = j.value("out_dir", "");
  o.python = j.value("python", "");
  return o;
}

std::vector<json> top_regions(const json& analysis, int top) {
  std::vector<json> out;
  for (const auto& r : analysis.value("regions", json::array())) {
    if (static_cast<int>(out.size()) >= top) break;
    if (r.contains("problem") && !r.contains("skipped")) out.push_back(r);
  }
  return out;
}

std::vector<std::string> run_argv(const std::string& kforge, const ModelOptions& o, const json& region,
                                  const fs::path& run_dir, std::int64_t resume_run) {
  std::vector<std::string> argv = {kforge, "run"};
  if (resume_run > 0) {
    argv.insert(argv.end(), {"--resume", std::to_string(resume_run), "--llm", o.llm, "--json", (run_dir / "run.json").string()});
  } else {
    argv.insert(argv.end(), {region.at("problem").get<std::string>(), "--target", o.target, "--llm", o.llm, "--out",
                             run_dir.string(), "--json", (run_dir / "run.json").string()});
    if (!o.python.empty()) argv.insert(argv.end(), {"--python", o.python});  // a resumed run keeps its own
    if (!o.device.empty()) argv.insert(argv.end(), {"--device", o.device});
    if (o.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.threads)});
    argv.insert(argv.end(), o.run_args.begin(), o.run_args.end());
  }
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

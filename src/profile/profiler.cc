#include "profile/profiler.h"


#include <fstream>
#include <random>

#include <fmt/format.h>

#include "eval/device_lock.h"
#include "eval/eval_run.h"
#include "eval/timing_stats.h"
#include "eval/worker_client.h"
#include "eval/worker_launch.h"
#include "profile/analysis.h"
#include "profile/ncu_report.h"
#include "profile/ncu_runner.h"
#include "profile/roofline_svg.h"
#include "util/environment.h"
#include "util/paths.h"

namespace kforge::profile {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

namespace {

// A step that did not work: what was being done and why, for the document's `error` or a note.
struct StepFailed {
  std::string message;
  bool environment = false;  // the machine cannot evaluate at all (a worker that never got ready)
};

struct Workers {
  std::unique_ptr<WorkerClient> ref, cand;
};

class Session {
 public:
  Session(const ProfileOptions& options, ProgressFn progress, void* user)
      : opt_(options), progress_(progress), user_(user) {}
  json run();

 private:
  void phase(const std::string& what) {
    if (progress_) progress_(what, user_);
  }
  json ask(WorkerClient& w, const std::string& cmd, const json& args, double timeout_s, const std::string& during);
  Workers start(const EvalOptions& options, double timeout_s);
  void check_candidate(Workers& w);
  void time_both(Workers& w);
  void torch_profiles(Workers& w);
  void nsight_compute();

  const ProfileOptions& opt_;
  ProgressFn progress_;
  void* user_;
  WorkerDirs dirs_;
  std::uint64_t seed_ = 0;
  int threads_ = 1;
  json doc_ = json::object();
};

json Session::ask(WorkerClient& w, const std::string& cmd, const json& args, double timeout_s, const std::string& during) {
  WorkerReply r = w.request(cmd, args, Seconds(timeout_s));
  if (r.kind == WorkerReply::kOk) {
    json body = r.body;
    body.erase("id");
    body.erase("ok");
    return body;
  }
  std::string why = r.kind == WorkerReply::kError ? r.body["error"].value("message", "") : r.detail;
  if (r.kind == WorkerReply::kTimeout) why = fmt::format("no answer within {:.0f} s", timeout_s);
  throw StepFailed{fmt::format("the {} worker failed while {}: {}", w.role(), during, why)};
}

// Both workers with the problem, the candidate, trial 0's inputs and the timing buffers loaded.
Workers Session::start(const EvalOptions& o, double timeout_s) {
  Workers w;
  w.ref = std::make_unique<WorkerClient>("reference", launch_worker(WorkerRole::kReference, o, dirs_, threads_).process);
  auto cand = launch_worker(WorkerRole::kCandidate, o, dirs_, threads_);
  doc_["isolation"] = cand.isolation;
  w.cand = std::make_unique<WorkerClient>("candidate", std::move(cand.process));
  phase("starting workers");
  // A worker that cannot even import torch or reach the device says so here, before any problem
  // code runs: the machine is at fault (environment_error, exit 4), not the problem or candidate.
  for (WorkerClient* worker : {w.ref.get(), w.cand.get()}) {
    WorkerReply r = worker->request("warm", warm_args(o, threads_, false), Seconds(std::max(timeout_s, 300.0)));
    if (r.kind != WorkerReply::kOk)
      throw StepFailed{fmt::format("the {} worker did not start: {}", worker->role(), reply_message(r)), true};
  }
  phase("loading problem");
  json problem = ask(*w.ref, "load_problem",
                     {{"problem", fs::absolute(o.problem).string()}, {"overrides", o.overrides}, {"seed", seed_},
                      {"device", o.device}, {"threads", threads_}, {"precision", o.precision},
                      {"shared_dir", dirs_.shared.string()}, {"tag", "main"}, {"variants", 0}},
                     std::max(timeout_s, o.reference_timeout_s), "loading the problem");
  doc_["globals"] = problem["globals"];
  phase("compiling and loading candidate");
  ask(*w.cand, "load_candidate",
      {{"candidate", (dirs_.candidate / o.candidate.filename()).string()}, {"transport", problem["transport"]},
       {"init_inputs", problem["init_inputs"]}, {"state", problem["state"]}, {"seed", seed_}, {"device", o.device}, {"threads", threads_},
       {"precision", o.precision}, {"kernel_modules", o.target.kernel_modules}},
      std::max(timeout_s, o.target.compile_timeout_s), "loading (compiling) the candidate");
  json trial = ask(*w.ref, "make_trial", {{"trial", 0}, {"seed", seed_}, {"tag", "main"}}, std::max(timeout_s, o.reference_timeout_s),
                   "drawing inputs");
  doc_["problem_bytes"] = {{"inputs", trial["input_bytes"]}, {"outputs", trial["output_bytes"]}};
  ask(*w.ref, "prepare_timing", {{"trial", 0}, {"compile_baseline", false}}, std::max(timeout_s, o.reference_timeout_s),
      "preparing the reference");
  ask(*w.cand, "prepare_timing", {{"inputs", trial["inputs"]}, {"input_sets", json::array()}}, timeout_s,
      "preparing the candidate");
  return w;
}

// One call checked against the reference: a profile of a wrong candidate says little, so it is flagged.
void Session::check_candidate(Workers& w) {
  phase("checking the candidate's output");
  const std::string out = "outputs_profile";
  ask(*w.cand, "run", {{"inputs", "inputs_main_0"}, {"outputs", out}}, opt_.eval.timeout_s, "running");
  json checked = ask(*w.ref, "check", {{"trial", 0}, {"candidate_outputs", out}}, opt_.eval.reference_timeout_s,
                     "checking outputs");
  doc_["correct"] = checked.value("match", false);
  if (!doc_["correct"].get<bool>())
    doc_["notes"].push_back(fmt::format("the candidate's output is wrong on the profiled inputs ({}); its profile "
                                        "describes a program that does not compute the reference",
                                        checked.value("mismatch", json::object()).value("message", "")));
}

// kforge's own timer on both sides, interleaved in blocks (docs/gpu.md, "Timing").
void Session::time_both(Workers& w) {
  std::map<std::string, std::vector<double>> samples;
  auto block = [&](const std::string& side, int reps, bool keep) {
    json r = side == "candidate" ? ask(*w.cand, "time", {{"reps", reps}}, opt_.eval.timeout_s, "timing")
                                 : ask(*w.ref, "time", {{"which", "eager"}, {"reps", reps}}, opt_.eval.reference_timeout_s,
                                       "timing");
    if (keep) {
      auto t = r.value("times_ms", std::vector<double>{});
      samples[side].insert(samples[side].end(), t.begin(), t.end());
    }
  };
  phase("timing (warm-up)");
  for (const char* side : {"candidate", "reference"}) block(side, std::max(1, opt_.eval.warmup), false);
  const int blocks = 4, per = std::max(1, opt_.reps / blocks);
  for (int b = 0; b < blocks; ++b) {
    phase(fmt::format("timing block {}/{}", b + 1, blocks));
    // Alternate which side goes first, so neither always runs right after the other.
    const bool candidate_first = b % 2 == 0;
    block(candidate_first ? "candidate" : "reference", per, true);
    block(candidate_first ? "reference" : "candidate", per, true);
  }
  for (auto& [side, values] : samples) doc_["sides"][side]["timing"] = to_json(summarize(values));
}

void Session::torch_profiles(Workers& w) {
  for (auto [side, worker] : {std::pair{"candidate", w.cand.get()}, std::pair{"reference", w.ref.get()}}) {
    phase(fmt::format("torch.profiler: {}", side));
    json tp = ask(*worker, "profile", {{"reps", opt_.profiler_reps}},
                  side[0] == 'c' ? opt_.eval.timeout_s : opt_.eval.reference_timeout_s, "profiling with torch.profiler");
    for (auto& k : tp["kernels"]) k["short_name"] = short_kernel_name(k.value("name", ""));
    doc_["sides"][side]["torch_profiler"] = tp;
  }
}

// Pass 2: both workers under Nsight Compute. Any failure is a note; the profile stands without it.
void Session::nsight_compute() {
  json& ncu_doc = doc_["ncu"];
  auto ncu = find_ncu(opt_.ncu);
  if (!ncu) {
    ncu_doc["status"] = "unavailable";
    ncu_doc["note"] = ncu_missing_note(opt_.ncu);
    doc_["notes"].push_back(ncu_doc["note"]);
    return;
  }
  ncu_doc["path"] = ncu->string();
  ncu_doc["version"] = ncu_version(*ncu);
  ncu_doc["calls"] = opt_.ncu_calls;
  ncu_doc["sections"] = json::array();
  for (int i = 0; kNcuSections[i]; ++i) ncu_doc["sections"].push_back(kNcuSections[i]);
  EvalOptions o = opt_.eval;
  const fs::path ref_report = dirs_.reference / "reference.ncu-rep", cand_report = dirs_.candidate / "candidate.ncu-rep";
  o.reference_wrapper = ncu_wrapper(*ncu, ref_report);
  o.candidate_wrapper = ncu_wrapper(*ncu, cand_report);
  o.log_dir = opt_.eval.log_dir / "ncu";
  fs::create_directories(o.log_dir);
  std::string failure;
  Workers w;
  try {
    phase("Nsight Compute: starting workers under ncu");
    w = start(o, opt_.ncu_timeout_s);
    for (auto [side, worker] : {std::pair{"candidate", w.cand.get()}, std::pair{"reference", w.ref.get()}}) {
      phase(fmt::format("Nsight Compute: {} ({} call(s), {} sections per kernel)", side, opt_.ncu_calls,
                        ncu_doc["sections"].size()));
      ask(*worker, "profile_range", {{"reps", opt_.ncu_calls}}, opt_.ncu_timeout_s, "running under Nsight Compute");
    }
  } catch (const StepFailed& e) {
    failure = e.message;
  }
  // ncu writes its report once the profiled process has exited: let both end on their own.
  phase("Nsight Compute: writing reports");
  std::string output;
  for (WorkerClient* worker : {w.cand.get(), w.ref.get()})
    if (worker) {
      worker->process().finish(std::chrono::seconds(120));
      output += worker->process().log_excerpt(16000);
    }
  for (auto [side, report] : {std::pair{"candidate", cand_report}, std::pair{"reference", ref_report}}) {
    NcuExport exported = failure.empty() ? export_ncu_report(*ncu, report) : NcuExport{"", "", failure};
    if (!exported.error.empty()) {
      std::string why = diagnose_ncu_output(output);
      ncu_doc["status"] = "failed";
      ncu_doc["note"] = fmt::format("Nsight Compute gave no profile: {}{}", why.empty() ? exported.error : why,
                                    why.empty() ? "" : fmt::format(" ({})", exported.error));
      doc_["notes"].push_back(ncu_doc["note"]);
      return;
    }
    std::vector<NcuLaunch> launches = parse_ncu_details(exported.details);
    if (!exported.raw.empty()) {
      // The raw page adds what the details page leaves out (warp stall reasons); launches match by ID.
      std::map<std::string, const NcuLaunch*> raw_by_id;
      auto raw = parse_ncu_raw(exported.raw);
      for (const auto& r : raw) raw_by_id[r.id] = &r;
      for (auto& l : launches)
        if (auto it = raw_by_id.find(l.id); it != raw_by_id.end())
          l.metrics.insert(l.metrics.end(), it->second->metrics.begin(), it->second->metrics.end());
    }
    json kernels = json::array();
    for (const auto& k : summarize_kernels(launches, opt_.ncu_calls)) kernels.push_back(to_json(k));
    const fs::path kept = o.log_dir / report.filename();
    std::error_code ec;
    fs::copy_file(report, kept, fs::copy_options::overwrite_existing, ec);
    doc_["sides"][side]["ncu"] = {{"kernels", kernels}, {"launches", launches.size()},
                                  {"report", ec ? report.string() : kept.string()}};
  }
  ncu_doc["status"] = "ok";
}

json Session::run() {
  const EvalOptions& e = opt_.eval;
  threads_ = e.threads > 0 ? e.threads : available_cpus();
  seed_ = e.seed ? *e.seed : std::random_device{}() % 2147483647u;
  doc_ = {{"problem", fs::absolute(e.problem).string()}, {"problem_name", e.problem.stem().string()},
          {"candidate", fs::absolute(e.candidate).string()}, {"target", e.target.name}, {"device", e.device},
          {"overrides", e.overrides}, {"seed", seed_}, {"threads", threads_}, {"notes", json::array()},
          {"sides", json::object()}, {"log_dir", e.log_dir.string()}};
  fs::path root = make_temp_dir("kforge-profile-");
  dirs_ = {root / "shared", root / "reference", root / "candidate"};
  for (const auto& d : {dirs_.shared, dirs_.reference, dirs_.candidate}) fs::create_directories(d);
  fs::create_directories(e.log_dir);
  fs::copy_file(e.candidate, dirs_.candidate / e.candidate.filename());
  const bool gpu = e.device.rfind("cuda", 0) == 0;
  try {
    phase("starting workers");
    // One measurement per GPU at a time, across processes (docs/gpu.md).
    auto lock = DeviceLock::acquire(e.device, e.target.device_lock, state_dir() / "locks", [&](const fs::path& path) {
      phase(fmt::format("waiting for {} (another measurement is running on this GPU)", path.filename().string()));
    });
    {
      Workers w = start(e, e.timeout_s);
      check_candidate(w);
      time_both(w);
      phase("speed of light");
      json sol = ask(*w.ref, "sol", {{"trial", 0}, {"peaks_cache", (cache_dir() / "peaks").string()}},
                     e.reference_timeout_s, "computing the speed of light");
      doc_["sol"] = sol;
      doc_["device_name"] = sol.value("peaks_key", json::object()).value("model", e.device);
      torch_profiles(w);
      w.cand->shutdown();
      w.ref->shutdown();
    }
    for (auto& [side, s] : doc_["sides"].items())
      s["achieved"] = achieved(s["timing"].value("median_ms", 0.0), doc_["sol"]);
    if (gpu) {
      nsight_compute();
    } else {
      doc_["notes"].push_back("hardware counters: not read on the CPU (cache misses, instruction mix and the like "
                              "need performance counters, which this machine does not expose to kforge); the "
                              "figures are times, threads and bytes moved against measured bandwidth");
    }
  } catch (const StepFailed& failed) {
    doc_["error"] = failed.message;
    if (failed.environment) doc_["status"] = "environment_error";
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  if (!doc_.contains("error")) finish_profile(doc_, opt_.chart);
  return doc_;
}

}  // namespace

void finish_profile(json& doc, const fs::path& chart) {
  const json sol = doc.value("sol", json::object());
  for (auto& [name, side] : doc["sides"].items()) side["analysis"] = analyze(side, sol);
  if (doc["sides"].contains("candidate")) doc["analysis"] = doc["sides"]["candidate"]["analysis"];
  if (!chart.empty()) {
    if (chart.has_parent_path()) fs::create_directories(chart.parent_path());
    std::ofstream(chart) << roofline_svg(doc);
    doc["chart"] = fs::absolute(chart).string();
  }
  doc["summary"] = render_text(doc);
}

json run_profile(const ProfileOptions& options, ProgressFn progress, void* user) {
  Session session(options, progress, user);
  return session.run();
}

}  // namespace kforge::profile

#include "loop/refine_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fstream>
#include <mutex>
#include <semaphore>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "agent/feedback.h"
#include "agent/recommendations.h"
#include "agent/reply_parser.h"
#include "eval/evaluator.h"
#include "eval/worker_pool.h"
#include "llm/errors.h"
#include "loop/speed_compare.h"
#include "profile/profiler.h"
#include "util/errors.h"
#include "util/files.h"

namespace kforge::loop {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string candidate_step(int round, int sample, int attempt) {
  return fmt::format("r{}.s{}.a{}", round, sample, attempt);
}

namespace {

constexpr std::size_t kHistoryKept = 8;  // feedback lines carried into later prompts

// Ends the run early: Ctrl-C, or a problem the candidate cannot fix (the reference is broken).
struct RunStopped {
  std::string status, reason, message;
};

std::string fmt2(const json& v) { return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string(); }

// Which platform a working kernel was written for, from the helper it imports.
std::string platform_of(const std::string& source) {
  if (source.find("kforge_worker import ocl") != std::string::npos || source.find("kforge_worker.ocl") != std::string::npos)
    return "opencl";
  if (source.find("kforge_worker import native") != std::string::npos ||
      source.find("kforge_worker.native") != std::string::npos)
    return "cpu";
  if (source.find("load_inline") != std::string::npos) return "cuda";
  return "another";
}

struct Attempt {
  std::string step, sha256, source;
  json eval;
  std::string eval_step;
};

struct SampleOutcome {
  std::optional<Attempt> last;  // the last candidate that was evaluated
  bool correct = false;
  std::string summary;          // how the sample ended, one line
};

struct HistoryLine {
  std::string step, summary;
};

struct EvalProgress {
  Progress* progress;
  std::string step;
};

void on_eval_progress(const std::string& phase, void* user) {
  auto* p = static_cast<EvalProgress*>(user);
  if (p->progress) p->progress->set_candidate(p->step, phase);
}

class Refiner {
 public:
  explicit Refiner(RunContext& ctx)
      : ctx_(ctx),
        opt_(ctx.options),
        eval_slots_(std::max(1, jobs())),
        workers_(std::min(jobs(), 4)),
        started_(Clock::now()) {}

  RunOutcome run();

 private:
  int jobs() const {
    if (opt_.jobs > 0) return opt_.jobs;
    unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    return std::max(1, std::min(opt_.samples, static_cast<int>(cpus)));
  }
  void check_cancel() const {
    if (llm::is_cancelled(ctx_.cancel)) throw RunStopped{"interrupted", "interrupted", "interrupted by the user"};
  }
  void event(const std::string& message) {
    if (ctx_.progress) ctx_.progress->event(message);
  }
  void decide(int round, const std::string& step, const std::string& kind, const std::string& sha, const json& detail) {
    ctx_.store->add_decision(ctx_.run_id, round, step, kind, sha, detail);
  }

  llm::Response call_llm(const std::string& step, const llm::Request& request);
  json evaluate_step(const std::string& step, const fs::path& file, const std::string& source, bool timing, int trials);
  SampleOutcome run_sample(int round, int sample, const std::string& system, const std::string& user);
  std::vector<std::string> analyze(int round);
  json profile_best(int round, const std::string& analyze_step);
  json base_context() const;
  json history_json() const;
  void accept(int round, const Attempt& a, const std::string& reason);
  std::optional<std::string> stop_reason(int round) const;

  RunContext& ctx_;
  const RunOptions& opt_;
  std::counting_semaphore<256> eval_slots_;
  // The reference process is kept across the run's evaluations, and the next candidates' processes
  // start while the LLM writes them.
  WorkerPool workers_;
  std::mutex timing_mutex_;  // one timed measurement on the device at a time
  std::shared_mutex children_mutex_;  // evaluations (shared) vs LLM calls that spawn processes
  std::mutex state_mutex_;
  Clock::time_point started_;
  std::int64_t tokens_ = 0;
  double cost_ = 0;
  std::optional<BestCandidate> best_;
  std::optional<std::pair<std::string, json>> last_profile_;  // the best candidate's sha256 and profile
  std::vector<HistoryLine> history_;
  int stale_rounds_ = 0;
  std::string reference_, notes_, example_reference_, example_candidate_, transfer_;
};

llm::Response Refiner::call_llm(const std::string& step, const llm::Request& request) {
  llm::Response response;
  if (auto stored = ctx_.store->llm_call(ctx_.run_id, step)) {
    response = llm::response_from_json(stored->response);
  } else {
    check_cancel();
    std::unique_lock<std::shared_mutex> children(children_mutex_, std::defer_lock);
    if (ctx_.provider_spawns_processes) children.lock();
    response = ctx_.provider->complete(request);
    if (children.owns_lock()) children.unlock();
    ctx_.store->add_llm_call(ctx_.run_id, step, llm::request_to_json(request), llm::response_to_json(response));
  }
  std::lock_guard lock(state_mutex_);
  tokens_ += response.usage.input_tokens + response.usage.output_tokens;
  cost_ += response.cost_usd.value_or(0);
  if (ctx_.progress) ctx_.progress->set_tokens(tokens_);
  return response;
}

json Refiner::evaluate_step(const std::string& step, const fs::path& file, const std::string& source, bool timing,
                            int trials) {
  if (auto stored = ctx_.store->run_evaluation(ctx_.run_id, step)) return stored->result;
  check_cancel();
  EvalOptions o = ctx_.eval_base;
  o.candidate = file;
  o.timing = timing;
  o.trials = trials;
  o.log_dir = ctx_.work_dir / "logs" / step;
  EvalProgress progress{ctx_.progress, step};
  EvalResult result;
  {
    // Correctness runs share the CPU in parallel (bounded by --jobs); a timed evaluation runs
    // alone so no other evaluation disturbs its measurements.
    eval_slots_.acquire();
    std::unique_lock<std::mutex> timing_lock(timing_mutex_, std::defer_lock);
    if (timing) timing_lock.lock();
    std::shared_lock children(children_mutex_);
    try {
      result = evaluate(o, on_eval_progress, &progress, &workers_);
    } catch (...) {
      eval_slots_.release();
      throw;
    }
    eval_slots_.release();
  }
  // Not stored: `kforge run --resume` on a fixed machine must evaluate this step again, not replay it.
  if (result.status() == status::kEnvironmentError) {  // every later evaluation would fail the same way
    std::string msg = result.doc.value("error", json::object()).value("message", "");
    throw RunStopped{"failed", status::kEnvironmentError, "this machine cannot evaluate: " + msg};
  }
  ctx_.store->add_run_evaluation(ctx_.run_id, step, result.doc, source);
  if (result.status() == status::kProblemError) {
    std::string msg = result.doc.value("error", json::object()).value("message", "");
    throw RunStopped{"failed", "problem_error", "the reference problem failed: " + msg};
  }
  return result.doc;
}

json Refiner::history_json() const {
  json h = json::array();
  std::size_t from = history_.size() > kHistoryKept ? history_.size() - kHistoryKept : 0;
  for (std::size_t i = from; i < history_.size(); ++i) h.push_back({{"step", history_[i].step}, {"summary", history_[i].summary}});
  return h;
}

json Refiner::base_context() const {
  json ctx = {{"problem_name", fs::path(opt_.problem).stem().string()},
              {"target", {{"name", ctx_.target.name}, {"description", ctx_.target.description}, {"language", ctx_.target.language}}},
              {"reference", reference_},
              {"notes", notes_},
              {"example", {{"reference", example_reference_}, {"candidate", example_candidate_}}},
              {"history", history_json()}};
  ctx["has_history"] = !ctx["history"].empty();
  return ctx;
}

std::vector<std::string> Refiner::analyze(int round) {
  const json& doc = best_->eval;
  json ctx = base_context();
  ctx["candidate"] = {{"step", best_->step}, {"source", best_->source}};
  ctx["timing"] = doc.value("timing", json::object());
  ctx["speedup_vs_eager"] = fmt2(doc.value("speedup_vs_eager", json()));
  ctx["speedup_vs_compile"] = fmt2(doc.value("speedup_vs_compile", json()));
  if (doc.contains("problem_bytes")) ctx["problem_bytes"] = doc["problem_bytes"];
  if (doc.contains("sol") && !doc["sol"].is_null()) ctx["sol"] = doc["sol"].dump(2);
  const std::string step = fmt::format("r{}.analyze", round);
  json profile = profile_best(round, step);
  if (profile.contains("summary")) ctx["profile"] = profile["summary"];
  if (profile.contains("chart")) ctx["profile_chart"] = profile["chart"];
  llm::Request req;
  req.messages.push_back(llm::Message::text(llm::Role::kSystem, ctx_.prompts.render("analyze.system", ctx)));
  req.messages.push_back(llm::Message::text(llm::Role::kUser, ctx_.prompts.render("analyze.user", ctx)));
  req.max_tokens = opt_.reply_max_tokens;
  req.temperature = opt_.temperature;
  if (ctx_.progress) ctx_.progress->set_candidate(step, "performance analysis");
  auto recs = agent::parse_recommendations(call_llm(step, req).text);
  decide(round, step, "analysis", best_->sha256, {{"recommendations", recs}});
  event(fmt::format("round {}: {} recommendation(s) for {}", round, recs.size(), best_->step));
  return recs;
}

// The best candidate's profile (docs/profiling.md) for the analysis prompt: its compact text and
// the roofline chart's path. Not needed when the analysis itself is already stored (a resumed run).
json Refiner::profile_best(int round, const std::string& analyze_step) {
  if (!opt_.profile || ctx_.store->llm_call(ctx_.run_id, analyze_step)) return json::object();
  const std::string step = fmt::format("r{}.profile", round);
  json doc;
  if (last_profile_ && last_profile_->first == best_->sha256) {
    doc = last_profile_->second;  // the best candidate has not changed since the last round's profile
  } else {
    profile::ProfileOptions p;
    p.eval = ctx_.eval_base;
    p.eval.candidate = ctx_.work_dir / "candidates" / (best_->step + ".py");
    p.eval.log_dir = ctx_.work_dir / "logs" / step;
    p.reps = 8;  // the evaluation has timed it already: these calls only anchor the profile's percentages
    p.profiler_reps = 3;
    p.chart = ctx_.work_dir / "profiles" / (best_->step + ".svg");
    EvalProgress progress{ctx_.progress, step};
    try {
      doc = profile::run_profile(p, on_eval_progress, &progress);
    } catch (const std::exception& e) {  // the analysis goes on without a profile
      doc = {{"error", e.what()}};
    }
    last_profile_ = {best_->sha256, doc};
  }
  json detail = {{"candidate", best_->step}};
  for (const char* key : {"summary", "chart", "analysis", "error", "notes"})
    if (doc.contains(key)) detail[key] = doc[key];
  decide(round, step, "profile", best_->sha256, detail);
  if (doc.contains("error")) event(fmt::format("round {}: profile of {} failed: {}", round, best_->step, doc["error"].get<std::string>()));
  return doc;
}

SampleOutcome Refiner::run_sample(int round, int sample, const std::string& system, const std::string& user) {
  std::vector<llm::Message> messages = {llm::Message::text(llm::Role::kSystem, system),
                                        llm::Message::text(llm::Role::kUser, user)};
  SampleOutcome out;
  const bool timed = opt_.samples == 1;  // a lone candidate is checked and timed in one evaluation
  for (int a = 0; a <= opt_.max_fix; ++a) {
    const std::string step = candidate_step(round, sample, a);
    const bool last = a == opt_.max_fix;
    llm::Request req;
    req.messages = messages;
    req.max_tokens = opt_.reply_max_tokens;
    req.temperature = opt_.temperature;
    if (ctx_.progress) ctx_.progress->set_candidate(step, "waiting for the model");
    llm::Response reply = call_llm(step + ".gen", req);
    messages.push_back(llm::Message::text(llm::Role::kAssistant, reply.text));

    auto parsed = agent::parse_candidate_reply(reply.text, reply.finish_reason == llm::FinishReason::kLength);
    if (!parsed.ok) {
      decide(round, step, last ? "gave_up" : "format_feedback", "",
             {{"status", "unusable_reply"}, {"summary", parsed.problem}, {"truncated", parsed.truncated}});
      out.summary = "unusable reply: " + parsed.problem;
      event(fmt::format("{}: unusable reply ({})", step, parsed.truncated ? "cut off" : "no program"));
      messages.push_back(llm::Message::text(llm::Role::kUser, ctx_.prompts.render("format.user", {{"problem", parsed.problem}})));
      continue;
    }
    const std::string sha = ctx_.store->add_run_candidate(ctx_.run_id, step, parsed.code);
    const fs::path file = ctx_.work_dir / "candidates" / (step + ".py");
    std::ofstream(file) << parsed.code;
    if (!parsed.repairs.empty()) decide(round, step, "repaired", sha, {{"repairs", parsed.repairs}});

    const std::string eval_step = step + (timed ? ".eval" : ".check");
    json doc = evaluate_step(eval_step, file, parsed.code, timed, opt_.eval_trials);
    out.last = Attempt{step, sha, parsed.code, doc, eval_step};
    out.summary = agent::one_line_summary(doc);
    event(fmt::format("{}: {}", step, out.summary));
    if (doc.value("status", "") == status::kCorrect) {
      out.correct = true;
      json detail = {{"status", "correct"}, {"summary", out.summary}, {"eval_step", eval_step}};
      if (auto m = candidate_median_ms(doc)) detail["median_ms"] = *m;
      detail["speedup_vs_eager"] = doc.value("speedup_vs_eager", json());
      decide(round, step, "correct", sha, detail);
      return out;
    }
    const std::string feedback = agent::functional_feedback(doc);
    decide(round, step, last ? "gave_up" : "feedback", sha,
           {{"status", doc.value("status", "")}, {"summary", out.summary}, {"feedback", feedback}});
    if (last) break;
    json fctx = {{"feedback", feedback}, {"attempt", a + 1}, {"max_attempts", opt_.max_fix + 1}};
    messages.push_back(llm::Message::text(llm::Role::kUser, ctx_.prompts.render("fix.user", fctx)));
  }
  return out;
}

void Refiner::accept(int round, const Attempt& a, const std::string& reason) {
  const json& doc = a.eval;
  const json timing = doc.value("timing", json::object());
  auto median = [&](const char* which) {
    return timing.contains(which) && timing[which].is_object() ? timing[which].value("median_ms", json()) : json();
  };
  SpeedVerdict vs_torch = beats_pytorch(doc, opt_.min_gain);
  auto best_base = speedup_vs_best_baseline(doc);
  json detail = {{"reason", reason},
                 {"eval_step", a.eval_step},
                 {"median_ms", median("candidate")},
                 {"eager_ms", median("eager")},
                 {"compile_ms", median("compile")},
                 {"speedup_vs_eager", doc.value("speedup_vs_eager", json())},
                 {"speedup_vs_compile", doc.value("speedup_vs_compile", json())},
                 {"speedup_vs_best_baseline", best_base ? json(*best_base) : json()},
                 {"beats_pytorch", vs_torch.faster},
                 {"pytorch_verdict", vs_torch.reason}};
  if (auto sol = sol_fraction(doc)) detail["sol_fraction"] = *sol;
  decide(round, a.step, "accepted", a.sha256, detail);
  best_ = BestCandidate{a.step, a.sha256, a.source, doc};
  if (ctx_.progress) ctx_.progress->set_best(doc.value("speedup_vs_eager", json()).is_number()
                                                 ? std::optional<double>(doc["speedup_vs_eager"].get<double>())
                                                 : std::nullopt);
  event(fmt::format("{}: new best ({})", a.step, reason));
}

std::optional<std::string> Refiner::stop_reason(int round) const {
  if (round >= opt_.rounds) return "rounds";
  if (opt_.max_tokens > 0 && tokens_ >= opt_.max_tokens) return "tokens";
  if (opt_.max_cost_usd > 0 && cost_ >= opt_.max_cost_usd) return "cost";
  if (opt_.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - started_).count() >= opt_.time_limit_s)
    return "time";
  if (opt_.patience > 0 && stale_rounds_ >= opt_.patience) return "plateau";
  if (best_ && opt_.sol_stop > 0) {
    if (auto f = sol_fraction(best_->eval); f && *f >= opt_.sol_stop) return "speed_of_light";
  }
  return std::nullopt;
}

RunOutcome Refiner::run() {
  reference_ = read_file(opt_.problem);
  notes_ = fs::exists(ctx_.target.notes) ? read_file(ctx_.target.notes) : "";
  example_reference_ = read_file(ctx_.target.example_reference);
  example_candidate_ = read_file(ctx_.target.example_candidate);
  if (!opt_.transfer_from.empty()) transfer_ = read_file(opt_.transfer_from);
  fs::create_directories(ctx_.work_dir / "candidates");
  fs::create_directories(ctx_.work_dir / "logs");

  RunOutcome outcome;
  int round = 0;
  try {
    for (;; ++round) {
      if (auto reason = stop_reason(round)) {
        outcome.stop_reason = *reason;
        break;
      }
      check_cancel();
      if (ctx_.progress) ctx_.progress->set_round(round + 1, opt_.rounds);
      const bool had_best = best_.has_value();
      std::vector<std::string> recs;
      if (best_) recs = analyze(round);

      json gctx = base_context();
      if (!transfer_.empty())
        gctx["transfer"] = {{"source", transfer_},
                            {"file", fs::path(opt_.transfer_from).filename().string()},
                            {"from_target", platform_of(transfer_)}};
      if (best_) {
        const json& d = best_->eval;
        gctx["best"] = {{"step", best_->step},
                        {"source", best_->source},
                        {"median_ms", candidate_median_ms(d) ? fmt::format("{:.4g}", *candidate_median_ms(d)) : "?"},
                        {"speedup_vs_eager", fmt2(d.value("speedup_vs_eager", json()))},
                        {"speedup_vs_compile", fmt2(d.value("speedup_vs_compile", json()))}};
      }
      json rec_list = json::array();
      for (std::size_t i = 0; i < recs.size(); ++i) rec_list.push_back({{"rank", i + 1}, {"text", recs[i]}});
      gctx["recommendations"] = rec_list;
      gctx["has_recommendations"] = !rec_list.empty();
      const std::string system = ctx_.prompts.render("generate.system", gctx);
      const std::string user = ctx_.prompts.render("generate.user", gctx);

      // Independent samples: each runs its own functional passes; evaluations are bounded by --jobs.
      std::vector<SampleOutcome> outcomes(static_cast<std::size_t>(opt_.samples));
      std::vector<std::exception_ptr> errors(outcomes.size());
      if (opt_.samples == 1) {
        outcomes[0] = run_sample(round, 0, system, user);
      } else {
        std::vector<std::thread> threads;
        for (int s = 0; s < opt_.samples; ++s)
          threads.emplace_back([&, s] {
            try {
              outcomes[s] = run_sample(round, s, system, user);
            } catch (...) {
              errors[s] = std::current_exception();
            }
          });
        for (auto& t : threads) t.join();
        for (auto& e : errors)
          if (e) std::rethrow_exception(e);
      }

      // Time the correct ones, one at a time (a lone sample was timed already).
      std::vector<Attempt> correct;
      for (auto& o : outcomes) {
        if (!o.correct) continue;
        Attempt a = *o.last;
        if (!candidate_median_ms(a.eval)) {
          a.eval_step = a.step + ".time";
          a.eval = evaluate_step(a.eval_step, ctx_.work_dir / "candidates" / (a.step + ".py"), a.source, true, 1);
          if (a.eval.value("status", "") != status::kCorrect) {
            o.summary = "failed while timed: " + agent::one_line_summary(a.eval);
            decide(round, a.step, "timing_failed", a.sha256, {{"status", a.eval.value("status", "")}, {"summary", o.summary}});
            continue;
          }
        }
        correct.push_back(a);
      }
      std::stable_sort(correct.begin(), correct.end(), [](const Attempt& x, const Attempt& y) {
        return candidate_median_ms(x.eval).value_or(1e300) < candidate_median_ms(y.eval).value_or(1e300);
      });

      bool improved = false;
      std::map<std::string, std::string> verdicts;
      for (const auto& a : correct) {
        if (!best_) {
          accept(round, a, "first correct candidate");
          improved = true;
          verdicts[a.step] = "accepted as the first correct candidate";
          continue;
        }
        SpeedVerdict v = faster_than(best_->eval, a.eval, opt_.min_gain);
        if (v.faster) {
          accept(round, a, v.reason);
          improved = true;
          verdicts[a.step] = "accepted: " + v.reason;
        } else {
          json detail = {{"reason", v.reason}, {"eval_step", a.eval_step}, {"best", best_->step}};
          if (auto m = candidate_median_ms(a.eval)) detail["median_ms"] = *m;
          detail["speedup_vs_eager"] = a.eval.value("speedup_vs_eager", json());
          decide(round, a.step, "rejected", a.sha256, detail);
          verdicts[a.step] = "correct but not faster than " + best_->step + " (" + v.reason + ")";
          event(fmt::format("{}: not accepted ({})", a.step, v.reason));
        }
      }
      for (std::size_t s = 0; s < outcomes.size(); ++s) {
        const auto& o = outcomes[s];
        std::string step = o.last ? o.last->step : candidate_step(round, static_cast<int>(s), opt_.max_fix);
        auto it = verdicts.find(step);
        history_.push_back({step, it != verdicts.end() ? it->second : o.summary});
      }
      stale_rounds_ = had_best && !improved ? stale_rounds_ + 1 : 0;
    }
    outcome.status = "finished";
  } catch (const RunStopped& stop) {
    outcome.status = stop.status;
    outcome.stop_reason = stop.reason;
    outcome.message = stop.message;
  } catch (const llm::LlmError& e) {
    if (e.kind() == llm::ErrorKind::kCancelled) {
      outcome.status = "interrupted";
      outcome.stop_reason = "interrupted";
    } else {
      outcome.status = "failed";
      outcome.stop_reason = "llm_error";
    }
    outcome.message = e.what();
  }
  if (outcome.status == "finished")
    decide(round, "run", "stop", "", {{"reason", outcome.stop_reason}, {"rounds", round}});
  outcome.best = best_;
  return outcome;
}

}  // namespace

RunOutcome run_refinement(RunContext& context) {
  Refiner refiner(context);
  return refiner.run();
}

}  // namespace kforge::loop

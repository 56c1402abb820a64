#include "loop/refine_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <semaphore>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "agent/feedback.h"
#include "eval/speed_claim.h"
#include "eval/eval_view.h"
#include "agent/recommendations.h"
#include "agent/reply_idea.h"
#include "agent/reply_parser.h"
#include "agent/source_diff.h"
#include "llm/errors.h"
#include "loop/attempt_history.h"
#include "loop/keep_decision.h"
#include "loop/measurement_check.h"
#include "loop/problem_facts.h"
#include "loop/request_facts.h"
#include "loop/speed_compare.h"
#include "loop/transfer_source.h"
#include "loop/unmeasured_context.h"
#include "profile/anchor.h"
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

// The best's measurements as the analysis prompt's table shows them (prompts/analyze.user.mustache):
// the threads, and the median and quartiles of each function that was timed.
json timing_table(const RecordedTimings& recorded) {
  json table = json::object();
  if (recorded.threads) table["threads"] = *recorded.threads;
  for (auto [name, timing] : {std::pair{"candidate", &recorded.candidate}, std::pair{"eager", &recorded.eager},
                              std::pair{"compile", &recorded.compile}}) {
    if (!*timing) continue;
    json row = json::object();
    for (auto [key, value] : {std::pair{"median_ms", (*timing)->median_ms}, std::pair{"p25_ms", (*timing)->p25_ms},
                              std::pair{"p75_ms", (*timing)->p75_ms}})
      if (value) row[key] = *value;
    table[name] = row;
  }
  return table;
}

// Ends the run early: Ctrl-C, or a problem the candidate cannot fix (the reference is broken).
struct RunStopped {
  std::string status, reason, message;
};


struct Attempt {
  std::string step, sha256, source, idea;
  json eval;
  std::string eval_step;
  MeasurementFlags flags;  // what stayed wrong with its measurement after a re-measurement
};

struct SampleOutcome {
  std::optional<Attempt> last;  // the last candidate that was evaluated
  bool correct = false;
  std::string summary;          // how the sample ended, one line
};

// The latest correct candidate and what was decided about it, for the next prompts.
struct LatestAttempt {
  Attempt attempt;
  std::string verdict, reason;
  bool became_best = false;
  std::string previous_best_step, previous_best_source;  // when it became the best
};

struct EvalProgress {
  Progress* progress;
  std::string step;
};

void on_eval_progress(const std::string& phase, void* user) {
  auto* p = static_cast<EvalProgress*>(user);
  if (p->progress) p->progress->set_candidate(p->step, phase);
}

std::string ratio_text(const std::optional<Ratio>& r) { return r ? r->text() : std::string("-"); }

class Refiner {
 public:
  explicit Refiner(RunContext& ctx)
      : ctx_(ctx),
        opt_(ctx.options),
        eval_slots_(std::max(1, jobs())),
        local_(ctx.evaluations ? nullptr : std::make_unique<LocalEvaluations>(std::min(jobs(), 4))),
        evaluations_(ctx.evaluations ? *ctx.evaluations : *local_),
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
  // Called once `step` is in the store.
  void step_stored(const std::string& step) const {
    if (!ctx_.stop_after.empty() && step == ctx_.stop_after)
      throw RunStopped{"interrupted", "interrupted", "stopped after " + step + " (--stop-after)"};
  }
  // Runs one measurement (an evaluation, a head to head, a profile). Ctrl-C ends the waits inside
  // it early; whatever it then returns or throws is abandoned, not stored, and redone on resume.
  template <typename F>
  auto measure(F&& f) -> decltype(f()) {
    try {
      auto result = f();
      check_cancel();
      return result;
    } catch (const RunStopped&) {
      throw;
    } catch (...) {
      check_cancel();
      throw;
    }
  }
  void event(const std::string& message) {
    if (ctx_.progress) ctx_.progress->event(message);
  }
  void decide(int round, const std::string& step, const std::string& kind, const std::string& sha, const json& detail) {
    ctx_.store->add_decision(ctx_.run_id, round, step, kind, sha, detail);
  }

  llm::Response call_llm(const std::string& step, const llm::Request& request);
  json evaluate_step(const std::string& step, const fs::path& file, const std::string& source, bool timing, int trials);
  SampleOutcome run_sample(int round, int sample, std::vector<llm::Message>& messages);
  bool time_and_check(int round, Attempt& a, std::string& summary);
  void judge(int round, std::vector<Attempt>& correct, std::map<std::string, std::string>& verdicts);
  KeepDecision keep_decision(const Attempt& a);
  std::vector<std::string> analyze(int round);
  json profile_best(int round);
  json base_context() const;
  // A prompt message with the text a replay matches it on (unmeasured_context.h).
  llm::Message prompt(llm::Role role, const std::string& name, const json& context) const {
    return prompt_message(ctx_.prompts, role, name, context);
  }
  json round_context(int round, const std::vector<std::string>& recs);
  void accept(int round, const Attempt& a, const std::string& reason, const json& keep);
  void record_history(int round, const Attempt& a, const std::string& verdict, std::optional<Ratio> vs_best);
  std::optional<std::string> stop_reason(int round) const;

  RunContext& ctx_;
  const RunOptions& opt_;
  std::counting_semaphore<256> eval_slots_;
  std::unique_ptr<LocalEvaluations> local_;  // when the context brings no evaluations of its own
  Evaluations& evaluations_;
  std::mutex timing_mutex_;  // one timed measurement on the device at a time
  std::shared_mutex children_mutex_;  // evaluations (shared) vs LLM calls that spawn processes
  std::mutex state_mutex_;
  Clock::time_point started_;
  std::int64_t tokens_ = 0;
  double cost_ = 0;
  std::optional<BestCandidate> best_;
  MeasurementFlags best_flags_;
  std::optional<std::pair<std::string, json>> last_profile_;  // the best candidate's sha256 and profile
  std::vector<AttemptRecord> history_;
  std::optional<LatestAttempt> latest_;
  int stale_rounds_ = 0;
  ProblemFacts facts_;
  nlohmann::json request_facts_;  // rules, device, baseline: what every request states (request_facts.h)
  std::string notes_, example_reference_, example_candidate_, transfer_, transfer_target_;
};

llm::Response Refiner::call_llm(const std::string& step, const llm::Request& request) {
  llm::Response response;
  if (auto stored = ctx_.store->llm_call(ctx_.run_id, step)) {
    response = llm::response_from_json(stored->response);
    ctx_.provider->answered_from_store(request, response);
  } else {
    check_cancel();
    std::size_t chars = 0;
    std::string parts;
    for (const auto& m : request.messages) {
      std::size_t n = 0;
      for (const auto& p : m.content) n += p.text.size();
      chars += n;
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", llm::role_name(m.role), n);
    }
    spdlog::debug("{}: request of {} characters in {} messages ({})", step, chars, request.messages.size(), parts);
    std::unique_lock<std::shared_mutex> children(children_mutex_, std::defer_lock);
    if (ctx_.provider_spawns_processes) children.lock();
    response = ctx_.provider->complete(request);
    if (children.owns_lock()) children.unlock();
    ctx_.store->add_llm_call(ctx_.run_id, step, llm::request_to_json(request), llm::response_to_json(response));
    step_stored(step);
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
      result = measure([&] { return evaluations_.evaluate(o, on_eval_progress, &progress); });
    } catch (...) {
      eval_slots_.release();
      throw;
    }
    eval_slots_.release();
  }
  // Not stored: `kforge run --resume` on a fixed machine must evaluate this step again, not replay it.
  if (result.status() == status::kEnvironmentError) {  // every later evaluation would fail the same way
    std::string msg = result.error_message();
    throw RunStopped{"failed", status::kEnvironmentError, "this machine cannot evaluate: " + msg};
  }
  ctx_.store->add_run_evaluation(ctx_.run_id, step, result.doc, source);
  if (result.status() == status::kProblemError) {
    std::string msg = result.error_message();
    throw RunStopped{"failed", "problem_error", "the reference problem failed: " + msg};
  }
  step_stored(step);
  return result.doc;
}

json Refiner::base_context() const {
  json ctx = {{"problem_name", fs::path(opt_.problem).stem().string()},
              {"target", {{"name", ctx_.target.name}, {"description", ctx_.target.description}, {"language", ctx_.target.language}}},
              {"reference", facts_.source},
              {"shapes", facts_.shapes},
              {"shapes_note", facts_.note},
              {"notes", notes_},
              {"example", {{"reference", example_reference_}, {"candidate", example_candidate_}}},
              {"history", history_rows(history_)}};
  ctx["has_history"] = !history_.empty();
  ctx.update(request_facts_);
  return ctx;
}

// Round `round`'s (>= 1) generation request, whole: the problem, the target notes, the best's source
// once, the attempts (at most kHistoryRows), the latest rejected attempt's diff and the advice. Not
// the conversation of earlier rounds: a request's size does not grow with the round.
constexpr std::size_t kHistoryRows = 12;

json Refiner::round_context(int round, const std::vector<std::string>& recs) {
  json ctx = base_context();
  ctx["round"] = round;
  std::size_t omitted = 0;
  ctx["history"] = recent_history_rows(ctx["history"], kHistoryRows, omitted);
  if (omitted > 0) ctx["history_omitted"] = omitted;
  if (best_) {
    ctx["best"] = {{"step", best_->step},
                   {"source", best_->source},
                   {"vs_eager", ratio_text(speedup_ratio(best_->eval, "eager"))}};
    if (auto c = speedup_ratio(best_->eval, "compile")) ctx["best"]["vs_compile"] = c->text();
  }
  if (latest_ && !latest_->became_best && best_) {
    ctx["rejected"] = {{"step", latest_->attempt.step},
                       {"verdict", latest_->verdict},
                       {"reason", latest_->reason},
                       {"diff", agent::unified_diff(best_->source, latest_->attempt.source, best_->step + " (best)",
                                                    latest_->attempt.step)}};
  }
  json rec_list = json::array();
  for (std::size_t i = 0; i < recs.size(); ++i) rec_list.push_back({{"rank", i + 1}, {"text", recs[i]}});
  ctx["recommendations"] = rec_list;
  ctx["has_recommendations"] = !rec_list.empty();
  return ctx;
}

std::vector<std::string> Refiner::analyze(int round) {
  const json& eval = best_->eval;
  const EvalView best = EvalView::decode(eval);
  json ctx = base_context();
  ctx["candidate"] = {{"step", best_->step}, {"source", best_->source}};
  ctx["timing"] = timing_table(best.recorded);
  ctx["speedup_vs_eager"] = ratio_text(speedup_ratio(eval, "eager"));
  if (auto c = speedup_ratio(eval, "compile")) ctx["speedup_vs_compile"] = c->text();
  std::string flags;
  for (const auto& r : best_flags_.reasons) flags += (flags.empty() ? "" : "; ") + r;
  if (!flags.empty()) ctx["flags"] = flags;
  if (std::string sol = sol_text(best); !sol.empty()) ctx["sol"] = sol;
  if (latest_) {
    const Attempt& a = latest_->attempt;
    json latest = {{"step", a.step}, {"verdict", latest_->verdict}, {"reason", latest_->reason}};
    if (latest_->became_best) {
      latest["direction"] = "from the previous best " + latest_->previous_best_step;
      latest["diff"] = agent::unified_diff(latest_->previous_best_source, a.source, latest_->previous_best_step, a.step);
    } else {
      latest["direction"] = "against the best " + best_->step;
      latest["diff"] = agent::unified_diff(best_->source, a.source, best_->step + " (best)", a.step);
    }
    if (!latest["diff"].get<std::string>().empty()) ctx["latest"] = latest;
  }
  const std::string step = fmt::format("r{}.analyze", round);
  ctx["profile_requested"] = opt_.profile;
  json profile = profile_best(round);
  if (profile.contains("summary")) ctx["profile"] = profile["summary"];
  if (profile.contains("chart")) ctx["profile_chart"] = profile["chart"];
  llm::Request req;
  req.messages.push_back(prompt(llm::Role::kSystem, "analyze.system", ctx));
  req.messages.push_back(prompt(llm::Role::kUser, "analyze.user", ctx));
  req.max_tokens = opt_.reply_max_tokens;
  req.temperature = opt_.temperature;
  if (ctx_.progress) ctx_.progress->set_candidate(step, "performance analysis");
  auto recs = agent::parse_recommendations(call_llm(step, req).text);
  decide(round, step, "analysis", best_->sha256, {{"recommendations", recs}, {"best", best_->step}});
  event(fmt::format("round {}: {} recommendation(s) for {}", round, recs.size(), best_->step));
  return recs;
}

// The best candidate's profile (docs/profiling.md) for the analysis prompt: its compact text and
// the roofline chart's path. Not needed when the analysis itself is already stored (a resumed run).
json Refiner::profile_best(int round) {
  if (!opt_.profile) return json::object();
  const std::string step = fmt::format("r{}.profile", round);
  // A resumed run takes the profile the prompt showed from the store: profiling again would
  // change the analysis request (and the next round's, which reuses an unchanged best's profile).
  for (const auto& d : ctx_.store->decisions(ctx_.run_id)) {
    if (d.step != step || d.kind != "profile") continue;
    last_profile_ = {d.candidate_sha256, d.detail};
    return d.detail;
  }
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
      doc = measure([&] { return evaluations_.profile(p, on_eval_progress, &progress); });
    } catch (const RunStopped&) {
      throw;
    } catch (const std::exception& e) {  // the analysis goes on without a profile
      doc = {{"error", e.what()}};
    }
    // The prompt shows the evaluation's table beside the profile: one time per call, the verdict's.
    profile::anchor_to_evaluation(doc, EvalView::decode(best_->eval));
    last_profile_ = {best_->sha256, doc};
  }
  json detail = {{"candidate", best_->step}};
  for (const char* key : {"summary", "chart", "analysis", "error", "notes"})
    if (doc.contains(key)) detail[key] = doc[key];
  // Whether Nsight Compute's figures reached the analysis, and why not: in the log and the summary.
  if (doc.contains("ncu") && doc["ncu"].is_object())
    detail["ncu"] = {{"status", doc["ncu"].value("status", "")}, {"note", doc["ncu"].value("note", "")}};
  decide(round, step, "profile", best_->sha256, detail);
  if (doc.contains("error")) event(fmt::format("round {}: profile of {} failed: {}", round, best_->step, doc["error"].get<std::string>()));
  if (detail.contains("ncu") && detail["ncu"].value("status", "") != "ok") {
    const std::string note = detail["ncu"].value("note", "");
    spdlog::warn("{}: no Nsight Compute metrics for {} ({}): {}", step, best_->step, detail["ncu"].value("status", ""), note);
    event(fmt::format("round {}: no Nsight Compute metrics: {}", round, note));
  }
  step_stored(step);
  return doc;
}

SampleOutcome Refiner::run_sample(int round, int sample, std::vector<llm::Message>& messages) {
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
      {
        std::lock_guard lock(state_mutex_);
        history_.push_back({step, round, "unusable reply", {}, {}, {}, {}, ""});
      }
      if (!last)
        messages.push_back(llm::Message::text(llm::Role::kUser, ctx_.prompts.render("format.user", {{"problem", parsed.problem}})));
      continue;
    }
    const std::string sha = ctx_.store->add_run_candidate(ctx_.run_id, step, parsed.code);
    const fs::path file = ctx_.work_dir / "candidates" / (step + ".py");
    std::ofstream(file) << parsed.code;
    if (!parsed.repairs.empty()) decide(round, step, "repaired", sha, {{"repairs", parsed.repairs}});

    const std::string eval_step = step + (timed ? ".eval" : ".check");
    json eval = evaluate_step(eval_step, file, parsed.code, timed, opt_.eval_trials);
    out.last = Attempt{step, sha, parsed.code, agent::reply_idea(reply.text, parsed.code), eval, eval_step, {}};
    out.summary = agent::one_line_summary(eval);
    event(fmt::format("{}: {}", step, out.summary));
    if (decode_status(eval) == status::kCorrect) {
      out.correct = true;
      json detail = {{"status", "correct"}, {"summary", out.summary}, {"eval_step", eval_step}, {"idea", out.last->idea}};
      if (auto m = candidate_median_ms(eval)) detail["median_ms"] = *m;
      if (auto r = speedup_ratio(eval, "eager")) detail["vs_eager"] = r->to_json();
      decide(round, step, "correct", sha, detail);
      return out;
    }
    {
      std::lock_guard lock(state_mutex_);
      history_.push_back({step, round, decode_status(eval).value_or("failed"), {}, {}, {}, {}, out.last->idea});
    }
    const std::string feedback = agent::functional_feedback(eval);
    decide(round, step, last ? "gave_up" : "feedback", sha,
           {{"status", decode_status(eval).value_or("")}, {"summary", out.summary}, {"feedback", feedback}, {"idea", out.last->idea}});
    if (last) break;
    json fctx = {{"feedback", feedback}, {"attempt", a + 1}, {"max_attempts", opt_.max_fix + 1}};
    messages.push_back(llm::Message::text(llm::Role::kUser, ctx_.prompts.render("fix.user", fctx)));
  }
  return out;
}

// A correct candidate's timing, checked before use: timed (when its check was untimed), then
// measured once more when the measurement is over its speed-of-light bound or unstable. A flag that
// persists stays with the candidate. False when it failed while timed.
bool Refiner::time_and_check(int round, Attempt& a, std::string& summary) {
  const fs::path file = ctx_.work_dir / "candidates" / (a.step + ".py");
  if (!candidate_median_ms(a.eval)) {
    a.eval_step = a.step + ".time";
    a.eval = evaluate_step(a.eval_step, file, a.source, true, 1);
    if (decode_status(a.eval) != status::kCorrect) {
      summary = "failed while timed: " + agent::one_line_summary(a.eval);
      decide(round, a.step, "timing_failed", a.sha256, {{"status", decode_status(a.eval).value_or("")}, {"summary", summary}});
      history_.push_back({a.step, round, "failed while timed", {}, {}, {}, {}, a.idea});
      return false;
    }
  }
  MeasurementFlags flags = check_measurement(a.eval);
  if (!flags.any()) return true;
  event(fmt::format("{}: {}; measuring again", a.step, flags.reasons.front()));
  json again = evaluate_step(a.step + ".retime", file, a.source, true, 1);
  if (decode_status(again) == status::kCorrect) {
    a.eval = again;
    a.eval_step = a.step + ".retime";
    flags = check_measurement(again);
  }
  a.flags = flags;
  if (flags.any()) {
    decide(round, a.step, "quarantined", a.sha256, flags.to_json());
    event(fmt::format("{}: measurement marked {} (never used by a stop rule)", a.step, fmt::join(flags.flags, ", ")));
  }
  return true;
}

// The challenger against the best: a stored decision on resume, else timed head to head.
KeepDecision Refiner::keep_decision(const Attempt& a) {
  for (const auto& d : ctx_.store->decisions(ctx_.run_id)) {
    if (d.step != a.step || !d.detail.contains("keep")) continue;
    const json& k = d.detail["keep"];
    KeepDecision stored;
    stored.outcome = k.value("outcome", "");
    stored.vs_best.point = k.value("ratio", 0.0);
    stored.vs_best.low = k.value("ci_low", 0.0);
    stored.vs_best.high = k.value("ci_high", 0.0);
    stored.vs_best.confidence = k.value("confidence", 0.95);
    stored.vs_best.rounds = k.value("rounds", 0);
    stored.measurements = k.value("measurements", 0);
    stored.reason = k.value("reason", "");
    stored.detail = k.value("detail", json::array());
    return stored;
  }
  const fs::path best_file = ctx_.work_dir / "candidates" / (best_->step + ".py");
  const fs::path file = ctx_.work_dir / "candidates" / (a.step + ".py");
  return decide_keep(
      [&](int i) {
        check_cancel();
        const std::string step = fmt::format("{}.vs_best.{}", a.step, i);
        EvalOptions o = ctx_.eval_base;
        o.trials = 1;
        o.log_dir = ctx_.work_dir / "logs" / step;
        EvalProgress progress{ctx_.progress, step};
        std::lock_guard timing(timing_mutex_);
        std::shared_lock children(children_mutex_);
        return measure([&] { return evaluations_.measure_pair(o, best_file, file, on_eval_progress, &progress); });
      },
      opt_.min_gain);
}

void Refiner::record_history(int round, const Attempt& a, const std::string& verdict, std::optional<Ratio> vs_best) {
  history_.push_back({a.step, round, verdict, speedup_ratio(a.eval, "eager"), speedup_ratio(a.eval, "compile"), vs_best,
                      a.flags.flags, a.idea});
}

void Refiner::accept(int round, const Attempt& a, const std::string& reason, const json& keep) {
  const json& eval = a.eval;
  const EvalView v = EvalView::decode(eval);
  auto median = [](const std::optional<RecordedTiming>& t) { return t && t->median_ms ? json(*t->median_ms) : json(); };
  SpeedVerdict vs_torch = beats_pytorch(eval, opt_.min_gain);
  auto eager = speedup_ratio(eval, "eager"), compile = speedup_ratio(eval, "compile");
  json detail = {{"reason", reason},
                 {"eval_step", a.eval_step},
                 {"median_ms", median(v.recorded.candidate)},
                 {"eager_ms", median(v.recorded.eager)},
                 {"compile_ms", median(v.recorded.compile)},
                 {"vs_eager", eager ? eager->to_json() : json()},
                 {"vs_compile", compile ? compile->to_json() : json()},
                 {"beats_pytorch", vs_torch.faster},
                 {"pytorch_verdict", vs_torch.reason},
                 {"flags", a.flags.flags},
                 {"idea", a.idea}};
  if (!keep.is_null()) detail["keep"] = keep;
  if (auto sol = sol_fraction(eval)) detail["sol_fraction"] = *sol;
  detail["speed_claim"] = speed_claim(eval).to_json();  // what every report says about its speed
  detail["timing_spread"] = timing_spread(v);
  if (v.torch) detail["torch"] = *v.torch;
  if (v.library_calls && !v.library_calls->operators.empty())
    detail["library_calls"] = v.library_calls->as_written;  // as recorded, with how the share was measured
  decide(round, a.step, "accepted", a.sha256, detail);
  std::optional<BestCandidate> previous = best_;
  best_ = BestCandidate{a.step, a.sha256, a.source, eval};
  best_flags_ = a.flags;
  latest_ = LatestAttempt{a, "kept", reason, true, previous ? previous->step : "", previous ? previous->source : ""};
  if (!previous) latest_.reset();  // nothing to compare the first correct candidate with
  if (ctx_.progress) ctx_.progress->set_best(eager ? std::optional<double>(eager->point) : std::nullopt);
  event(fmt::format("{}: new best ({})", a.step, reason));
}

// Keep or reject each correct candidate of a round, fastest (against eager) first.
void Refiner::judge(int round, std::vector<Attempt>& correct, std::map<std::string, std::string>& verdicts) {
  std::stable_sort(correct.begin(), correct.end(), [](const Attempt& x, const Attempt& y) {
    auto rx = speedup_ratio(x.eval, "eager"), ry = speedup_ratio(y.eval, "eager");
    return (rx ? rx->point : 0) > (ry ? ry->point : 0);
  });
  for (const auto& a : correct) {
    if (!best_) {
      accept(round, a, "first correct candidate", json());
      record_history(round, a, "kept (first correct)", std::nullopt);
      verdicts[a.step] = "kept: the first correct candidate";
      continue;
    }
    const std::string best_step = best_->step;
    KeepDecision k = keep_decision(a);
    Ratio vs_best{k.vs_best.point, k.vs_best.low, k.vs_best.high};
    std::optional<Ratio> ratio = k.outcome == "failed" ? std::nullopt : std::optional<Ratio>(vs_best);
    if (k.kept()) {
      accept(round, a, k.reason, k.to_json());
      verdicts[a.step] = "kept: " + k.reason;
      record_history(round, a, "kept", ratio);
      step_stored(a.step + ".keep");
      continue;
    } else {
      json detail = {{"reason", k.reason}, {"eval_step", a.eval_step}, {"best", best_step}, {"keep", k.to_json()},
                     {"flags", a.flags.flags}, {"idea", a.idea}};
      if (auto m = candidate_median_ms(a.eval)) detail["median_ms"] = *m;
      if (auto r = speedup_ratio(a.eval, "eager")) detail["vs_eager"] = r->to_json();
      const std::string kind = k.outcome == "undecided" ? "undecided" : "rejected";
      decide(round, a.step, kind, a.sha256, detail);
      latest_ = LatestAttempt{a, kind, k.reason, false, "", ""};
      verdicts[a.step] = kind + " against " + best_step + ": " + k.reason;
      event(fmt::format("{}: {} against {} ({})", a.step, kind, best_step, k.reason));
      record_history(round, a, k.outcome, ratio);
      step_stored(a.step + ".keep");
    }
  }
}

std::optional<std::string> Refiner::stop_reason(int round) const {
  if (round >= opt_.rounds) return "rounds";
  if (opt_.max_tokens > 0 && tokens_ >= opt_.max_tokens) return "tokens";
  if (opt_.max_cost_usd > 0 && cost_ >= opt_.max_cost_usd) return "cost";
  if (opt_.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - started_).count() >= opt_.time_limit_s)
    return "time";
  if (opt_.patience > 0 && stale_rounds_ >= opt_.patience) return "plateau";
  // A flagged measurement (over its bound, unstable) never stops a run.
  if (best_ && !best_flags_.any() && sol_stop_reached(best_->eval, opt_.sol_stop)) return "speed_of_light";
  return std::nullopt;
}

RunOutcome Refiner::run() {
  facts_ = describe_problem(ctx_.eval_base.python, opt_.problem, opt_.overrides, ctx_.work_dir / "problem");
  if (!facts_.note.empty()) event("prompts go without input shapes: " + facts_.note);
  // The device, the baselines and the bound, measured once before round 0 and stored with the run,
  // so a resumed run states the same figures.
  json baseline;
  for (const auto& d : ctx_.store->decisions(ctx_.run_id))
    if (d.step == "baseline" && d.kind == "baseline") baseline = d.detail;
  if (baseline.is_null()) {
    if (ctx_.progress) ctx_.progress->set_candidate("baseline", "measuring the device and PyTorch's times");
    baseline = measure_baseline(ctx_.eval_base, ctx_.work_dir / "baseline");
    if (baseline.contains("error")) event("the first prompt goes without baseline times: " + baseline.value("error", ""));
    decide(0, "baseline", "baseline", "", baseline);
  }
  request_facts_ = request_facts(ctx_.eval_base, baseline);
  notes_ = fs::exists(ctx_.target.notes) ? read_file(ctx_.target.notes) : "";
  example_reference_ = read_file(ctx_.target.example_reference);
  example_candidate_ = read_file(ctx_.target.example_candidate);
  if (!opt_.transfer_from.empty()) {
    transfer_ = read_file(opt_.transfer_from);
    transfer_target_ = transfer_source_target(*ctx_.store, transfer_);
  }
  fs::create_directories(ctx_.work_dir / "candidates");
  fs::create_directories(ctx_.work_dir / "logs");

  // One generation conversation per sample and round: round 0's is the task with the target's notes
  // and example; a later round's starts again from one message that carries everything it needs
  // (round_context), and the fixes of its sample follow it.
  std::vector<std::vector<llm::Message>> lanes(static_cast<std::size_t>(opt_.samples));
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

      if (round == 0) {
        json gctx = base_context();
        if (!transfer_.empty())
          gctx["transfer"] = {{"source", transfer_},
                              {"file", fs::path(opt_.transfer_from).filename().string()},
                              {"from_target", transfer_target_}};
        const llm::Message system = prompt(llm::Role::kSystem, "generate.system", gctx);
        const llm::Message user = prompt(llm::Role::kUser, "generate.user", gctx);
        for (auto& lane : lanes) lane = {system, user};
      } else {
        const json rctx = round_context(round, recs);
        const llm::Message system = prompt(llm::Role::kSystem, "generate.system", rctx);
        const llm::Message user = prompt(llm::Role::kUser, "generate.round", rctx);
        for (auto& lane : lanes) lane = {system, user};
      }

      // Independent samples: each runs its own functional passes; evaluations are bounded by --jobs.
      std::vector<SampleOutcome> outcomes(static_cast<std::size_t>(opt_.samples));
      std::vector<std::exception_ptr> errors(outcomes.size());
      if (opt_.samples == 1) {
        outcomes[0] = run_sample(round, 0, lanes[0]);
      } else {
        std::vector<std::thread> threads;
        for (int s = 0; s < opt_.samples; ++s)
          threads.emplace_back([&, s] {
            try {
              outcomes[s] = run_sample(round, s, lanes[s]);
            } catch (...) {
              errors[s] = std::current_exception();
            }
          });
        for (auto& t : threads) t.join();
        for (auto& e : errors)
          if (e) std::rethrow_exception(e);
      }

      // Time the correct ones one at a time (a lone sample was timed already) and check each timing.
      std::vector<Attempt> correct;
      for (auto& o : outcomes) {
        if (!o.correct) continue;
        Attempt a = *o.last;
        if (time_and_check(round, a, o.summary)) correct.push_back(a);
      }
      std::map<std::string, std::string> verdicts;
      const std::string best_before = best_ ? best_->step : "";
      judge(round, correct, verdicts);
      const bool improved = best_ && best_->step != best_before;
      stale_rounds_ = had_best && !improved ? stale_rounds_ + 1 : 0;
    }
    outcome.status = "finished";
  } catch (const RunStopped& stop) {
    outcome.status = stop.status;
    outcome.stop_reason = stop.reason;
    outcome.message = stop.message;
  } catch (const EvaluationsLost& e) {
    outcome.status = "interrupted";
    outcome.stop_reason = "interrupted";
    outcome.message = e.what();
  } catch (const EvaluationFailed& e) {
    outcome.status = "failed";
    outcome.stop_reason = "evaluation_error";
    outcome.message = e.what();
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

#include "bench/bench_runner.h"

#include <atomic>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/outcome.h"
#include "bench/run_scheduler.h"
#include "eval/eval_result.h"
#include "eval/eval_view.h"
#include "loop/run_options.h"
#include "loop/run_summary.h"
#include "util/files.h"

namespace kforge::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string short_summary(const json& o) {
  if (!o.value("correct", false)) return fmt::format("{}{}", o.value("status", ""),
                                                     o.value("message", "").empty() ? "" : ": " + o.value("message", ""));
  const json s = o.value("speedup_vs_eager", json());
  return s.is_number() ? fmt::format("correct, {:.2f}x vs eager", s.get<double>()) : "correct";
}

class Runner {
 public:
  explicit Runner(BenchContext& ctx) : ctx_(ctx), start_(Clock::now()) {}

  BenchOutcome run() {
    rows_ = ctx_.store->bench_problems(ctx_.bench_id);
    for (std::size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].status != "done") todo_.push_back(i);
    ScheduleOptions schedule_options;
    schedule_options.jobs = ctx_.options.jobs;
    schedule_options.devices = ctx_.options.devices;
    schedule_options.cancel = ctx_.cancel;
    schedule(todo_.size(), schedule_options, [this](std::size_t k, const std::string& device) { return work(k, device); });

    BenchOutcome out;
    out.total = static_cast<int>(rows_.size());
    for (const auto& r : ctx_.store->bench_problems(ctx_.bench_id)) out.done += r.status == "done";
    out.status = out.done == out.total ? "finished" : "interrupted";
    out.environment_error = environment_error_;
    out.wall_seconds = wall_seconds();
    return out;
  }

 private:
  double wall_seconds() const {
    return ctx_.prior_wall_seconds + std::chrono::duration<double>(Clock::now() - start_).count();
  }

  bool cancelled() const { return llm::is_cancelled(ctx_.cancel); }

  bool environment_failed() {
    std::lock_guard lock(environment_mutex_);
    return !environment_error_.empty();
  }

  // Problem todo_[k] on `device`; false: no other problem starts (bench/run_scheduler.h).
  bool work(std::size_t k, const std::string& device) {
    if (lost_ || environment_failed()) return false;
    StoredBenchProblem row = rows_[todo_[k]];
    ctx_.progress->started(row.name);
    bool done = true;
    try {
      done = ctx_.options.mode == "llm" ? run_llm(row, device) : run_candidate(row, device);
    } catch (const ExecutorLost& e) {
      // Not the candidate's failure: the problem stays unfinished for `--resume`.
      if (!lost_.exchange(true)) ctx_.progress->event(fmt::format("stopping: {}", e.what()));
      return false;
    } catch (const std::exception& e) {
      // One problem's failure (an unreadable candidate, a store error) must not end the bench.
      row.outcome = {{"status", "bench_error"}, {"correct", false}, {"message", e.what()},
                     {"speedup_by_round", json::array()}};
    }
    // The problem has no more evaluations in this bench: its kept reference only holds memory.
    if (ctx_.options.mode != "llm") ctx_.executor->problem_done(row.problem);
    // Ctrl-C ends the waits of an evaluation in flight early (util/interrupt.h): what it returned is
    // abandoned, and the problem stays unfinished for `--resume`.
    if (cancelled()) return false;
    if (!done) return true;
    if (row.outcome.value("status", "") == status::kEnvironmentError) {
      // Every other problem would fail the same way. Left undone: `--resume` on a fixed machine does it.
      std::lock_guard lock(environment_mutex_);
      if (environment_error_.empty()) environment_error_ = row.outcome.value("message", "this machine cannot evaluate");
      return false;
    }
    row.status = "done";
    ctx_.store->update_bench_problem(ctx_.bench_id, row);
    // The stored summary keeps what else it holds (the command line the bench was started with).
    json summary_so_far = json::object();
    if (auto b = ctx_.store->bench(ctx_.bench_id); b && b->summary.is_object()) summary_so_far = b->summary;
    summary_so_far["wall_seconds"] = wall_seconds();
    ctx_.store->set_bench_status(ctx_.bench_id, "running", summary_so_far);
    std::string summary = short_summary(row.outcome);
    if (row.outcome.contains("node")) summary += fmt::format(" [{}]", row.outcome["node"].get<std::string>());
    ctx_.progress->finished(row.name, row.outcome.value("correct", false), summary);
    return true;
  }

  // --- candidates mode --------------------------------------------------------------------------

  // `alone`: a CPU timing that must have the device to itself (the executor sees to it).
  EvalResult evaluate_on(StoredBenchProblem& row, const std::string& device, bool timing, bool alone, const char* tag) {
    EvalOptions e = ctx_.eval_base;
    e.problem = row.problem;
    e.candidate = row.candidate;
    e.device = device;
    e.timing = timing;
    e.log_dir = ctx_.log_dir / fmt::format("{}-{}", row.name, tag);
    ExecutedEval done = ctx_.executor->evaluate(e, alone);
    if (done.node != "local") row.outcome["node"] = done.node;  // where the last evaluation ran
    return std::move(done.result);
  }

  // Returns true when the problem is done (its outcome set in `row`).
  bool run_candidate(StoredBenchProblem& row, const std::string& device) {
    if (row.candidate.empty()) {
      row.outcome = missing_candidate_outcome((fs::path(ctx_.options.candidates_dir) / (row.name + ".py")).string());
      return true;
    }
    auto start = Clock::now();
    const std::string source = read_file(row.candidate);
    const bool split = device == "cpu" && ctx_.options.jobs > 1 && ctx_.eval_base.timing;
    json doc;
    std::int64_t id = 0;
    if (split) {
      // Correctness first, in parallel with other problems; a failure there is the result.
      if (row.check_evaluation_id > 0) {
        auto stored = ctx_.store->evaluation(row.check_evaluation_id);
        if (stored) doc = stored->result;
      }
      if (doc.is_null()) {
        doc = evaluate_on(row, device, false, false, "check").doc;
        if (decode_status(doc) == status::kEnvironmentError) {  // not kept for --resume to reuse
          row.outcome = outcome_from_evaluation(doc, 0);
          return true;
        }
        row.check_evaluation_id = ctx_.store->add_evaluation(doc, source);
        ctx_.store->update_bench_problem(ctx_.bench_id, row);
      }
      id = row.check_evaluation_id;
      if (EvalView::decode(doc).correct) {
        doc = evaluate_on(row, device, true, true, "time").doc;
        id = ctx_.store->add_evaluation(doc, source);
      }
    } else {
      doc = evaluate_on(row, device, ctx_.eval_base.timing, false, "eval").doc;
      id = ctx_.store->add_evaluation(doc, source);
    }
    row.evaluation_id = id;
    json node = row.outcome.is_object() ? row.outcome.value("node", json()) : json();
    row.outcome = outcome_from_evaluation(doc, id);
    if (node.is_string()) row.outcome["node"] = node;
    row.outcome["wall_seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
    return true;
  }

  // --- llm mode ---------------------------------------------------------------------------------

  std::int64_t create_run(const StoredBenchProblem& row, const std::string& device) {
    loop::RunOptions o = ctx_.options.run;
    o.problem = row.problem;
    o.device = device == "cpu" && o.target == "cpu" ? "" : device;
    o.out_dir = (fs::path(ctx_.options.out_dir) / "problems" / row.name).string();
    // A profile runs the candidate on this host, where a relayed run's evaluations do not run.
    if (relays()) o.profile = false;
    return ctx_.store->create_bench_run(ctx_.bench_id, row.name, o.problem, row.problem_sha256, o.target, o.llm,
                                        loop::to_json(o));
  }

  bool relays() const { return relays_runs(ctx_.executor); }

  bool run_llm(StoredBenchProblem& row, const std::string& device) {
    auto start = Clock::now();
    if (row.run_id == 0) {
      row.run_id = create_run(row, device);
      row.status = "running";
    }
    std::vector<std::string> argv = {ctx_.kforge_exe.string()};
    if (ctx_.config_path) argv.insert(argv.end(), {"--config", ctx_.config_path->string()});
    argv.insert(argv.end(), {"run", "--resume", std::to_string(row.run_id), "--db", ctx_.db_path.string()});
    const fs::path log_file = ctx_.log_dir / fmt::format("{}-run-{}.log", row.name, row.run_id);
    ChildRunResult child = run_child_run(std::move(argv), log_file, ctx_.executor, ctx_.cancel);
    const bool interrupted = child.interrupted;
    if (!child.lost.empty()) {
      auto run = ctx_.store->run(row.run_id);
      if (run && run->status != "finished") throw ExecutorLost(child.lost);  // resumed with the bench
    }
    auto run = ctx_.store->run(row.run_id);
    if (interrupted && run && run->status != "finished") return false;  // resumed with the bench
    if (run && run->summary.is_object() && run->summary.value("stop_reason", "") == status::kEnvironmentError) {
      row.outcome = {{"status", status::kEnvironmentError}, {"message", run->summary.value("message", "")}};
      return true;
    }
    json summary = loop::build_summary(*ctx_.store, row.run_id);
    if (run && run->summary.is_object() && run->summary.contains("options")) {
      fs::path best = fs::path(run->summary["options"].value("out_dir", "")) / "best.py";
      if (summary.value("best", json()).is_object() && fs::exists(best)) summary["best_file"] = best.string();
    }
    row.outcome = outcome_from_run(summary);
    if (run && run->status == "running")  // the child died without recording an end
      row.outcome["message"] = fmt::format("kforge run ended with {}; log: {}", child.exit.describe(), log_file.string());
    if (!child.node.empty()) row.outcome["node"] = child.node;  // where its latest evaluation ran
    row.outcome["wall_seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
    return true;
  }

  BenchContext& ctx_;
  Clock::time_point start_;
  std::vector<StoredBenchProblem> rows_;
  std::vector<std::size_t> todo_;
  std::atomic<bool> lost_{false};  // the executor can run nothing more
  std::mutex environment_mutex_;
  std::string environment_error_;  // set by the first problem this machine cannot evaluate
};

}  // namespace

BenchOutcome run_bench(BenchContext& ctx) { return Runner(ctx).run(); }

}  // namespace kforge::bench

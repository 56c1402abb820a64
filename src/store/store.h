// kforge's SQLite store: every evaluation (and later every run, LLM call and decision) as it happens.
// Default location: <state dir>/kforge.db (~/.kforge/kforge.db); `--db` chooses another.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace kforge {

struct StoredEvaluation {
  std::int64_t id = 0;
  std::string created_at;  // UTC, ISO 8601
  std::string status;
  std::string candidate_sha256;
  nlohmann::json result;
};

// One `kforge run`: what was asked (problem, target, model, options) and how it ended.
struct StoredRun {
  std::int64_t id = 0;
  std::string created_at, updated_at;
  std::string status;  // running, finished, interrupted, failed
  std::string problem, problem_sha256, target, llm;
  nlohmann::json options;
  nlohmann::json summary;  // null until the run ends
};

// One finished LLM call of a run, under the step name that asked it.
struct StoredLlmCall {
  std::string step;
  std::string created_at;
  nlohmann::json request;   // llm::request_to_json
  nlohmann::json response;  // llm::response_to_json
  std::int64_t input_tokens = 0, output_tokens = 0;
};

// One decision of a run (feedback sent, candidate accepted or rejected, run stopped, ...).
struct StoredDecision {
  std::int64_t id = 0;
  std::string created_at;
  int round = 0;
  std::string step, kind, candidate_sha256;
  nlohmann::json detail;
};

// One `kforge bench`: a suite run in one mode (`candidates` or `llm`) on one target.
struct StoredBench {
  std::int64_t id = 0;
  std::string created_at, updated_at;
  std::string status;  // running, finished, interrupted
  std::string mode, suite, target;
  nlohmann::json options;
  nlohmann::json summary;  // null until the bench ends
};

// One problem of a bench and how far it got: pending, running, done.
struct StoredBenchProblem {
  int position = 0;  // order in the suite
  std::string name, problem, problem_sha256;
  std::string candidate;  // --candidates: the matched file, empty when none matched
  std::string status = "pending";
  std::int64_t run_id = 0;               // llm mode: its `kforge run` (0: not started)
  std::int64_t check_evaluation_id = 0;  // candidates mode: the untimed correctness evaluation, when split
  std::int64_t evaluation_id = 0;        // candidates mode: the evaluation that decided it
  nlohmann::json outcome;                // the problem's result once done (src/bench/outcome.h)
  std::string updated_at;
};

class Store {
 public:
  // Opens (creating if needed) the database and brings its schema up to date.
  explicit Store(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  static std::filesystem::path default_path();

  // Records one evaluation with the candidate's source; returns its id.
  std::int64_t add_evaluation(const nlohmann::json& evaluation, const std::string& candidate_source);
  std::optional<StoredEvaluation> evaluation(std::int64_t id) const;
  std::vector<StoredEvaluation> evaluations_of(const std::string& candidate_sha256) const;
  std::optional<std::string> candidate_source(const std::string& sha256) const;

  int schema_version() const;

  // Runs. Every write below is committed before it returns, so a killed run loses at most the
  // step in flight. Rewriting a step that is already stored keeps the first version.
  std::int64_t create_run(const std::string& problem, const std::string& problem_sha256, const std::string& target,
                          const std::string& llm, const nlohmann::json& options);
  std::optional<StoredRun> run(std::int64_t id) const;
  void set_run_status(std::int64_t id, const std::string& status, const nlohmann::json& summary = nullptr);

  void add_llm_call(std::int64_t run_id, const std::string& step, const nlohmann::json& request,
                    const nlohmann::json& response);
  std::optional<StoredLlmCall> llm_call(std::int64_t run_id, const std::string& step) const;
  std::vector<StoredLlmCall> llm_calls(std::int64_t run_id) const;

  // Stores the candidate's source and ties it to the step; returns its sha256.
  std::string add_run_candidate(std::int64_t run_id, const std::string& step, const std::string& source);
  std::optional<std::string> run_candidate(std::int64_t run_id, const std::string& step) const;

  // Records the evaluation and ties it to the step in one transaction.
  std::int64_t add_run_evaluation(std::int64_t run_id, const std::string& step, const nlohmann::json& evaluation,
                                  const std::string& candidate_source);
  std::optional<StoredEvaluation> run_evaluation(std::int64_t run_id, const std::string& step) const;
  std::vector<std::pair<std::string, StoredEvaluation>> run_evaluations(std::int64_t run_id) const;

  // Benches: the bench and all its problems are created in one transaction; each problem row is
  // then updated as it progresses.
  std::int64_t create_bench(const std::string& mode, const std::string& suite, const std::string& target,
                            const nlohmann::json& options, const std::vector<StoredBenchProblem>& problems);
  std::optional<StoredBench> bench(std::int64_t id) const;
  void set_bench_status(std::int64_t id, const std::string& status, const nlohmann::json& summary = nullptr);
  void set_bench_options(std::int64_t id, const nlohmann::json& options);
  std::vector<StoredBenchProblem> bench_problems(std::int64_t bench_id) const;
  void update_bench_problem(std::int64_t bench_id, const StoredBenchProblem& problem);
  // Creates the run of a bench problem and ties it to the problem (status "running") in one
  // transaction, so a bench killed at any moment never leaves a run that it does not know.
  std::int64_t create_bench_run(std::int64_t bench_id, const std::string& name, const std::string& problem,
                                const std::string& problem_sha256, const std::string& target, const std::string& llm,
                                const nlohmann::json& options);

  void add_decision(std::int64_t run_id, int round, const std::string& step, const std::string& kind,
                    const std::string& candidate_sha256, const nlohmann::json& detail);
  std::vector<StoredDecision> decisions(std::int64_t run_id) const;

 private:
  void exec(const char* sql);
  void migrate();
  std::int64_t insert_evaluation(const nlohmann::json& evaluation, const std::string& candidate_source);
  // One connection is shared by the threads of a run; transactions must not interleave.
  mutable std::recursive_mutex mutex_;
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace kforge

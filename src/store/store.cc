#include "store/store.h"

#include <chrono>
#include <thread>

#include <sqlite3.h>

#include <fmt/format.h>

#include "eval/eval_view.h"
#include "util/errors.h"
#include "util/hash.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// Each entry moves the schema one version forward; never edit a released entry, append a new one.
const char* const kMigrations[] = {
    R"sql(
    CREATE TABLE candidates (
      sha256 TEXT PRIMARY KEY,
      source TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
    );
    CREATE TABLE evaluations (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      candidate_sha256 TEXT NOT NULL REFERENCES candidates(sha256),
      problem TEXT NOT NULL,
      problem_sha256 TEXT NOT NULL,
      target TEXT NOT NULL,
      device TEXT NOT NULL,
      status TEXT NOT NULL,
      speedup_vs_eager REAL,
      speedup_vs_compile REAL,
      result_json TEXT NOT NULL
    );
    CREATE INDEX evaluations_by_candidate ON evaluations(candidate_sha256);
    CREATE INDEX evaluations_by_problem ON evaluations(problem_sha256, target);
    )sql",
    // Refinement runs (`kforge run`): each step of a run is keyed by a stable name ("r1.s0.a2.gen"),
    // so a resumed run finds what it already did and repeats no finished LLM call or evaluation.
    R"sql(
    CREATE TABLE runs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      status TEXT NOT NULL,
      problem TEXT NOT NULL,
      problem_sha256 TEXT NOT NULL,
      target TEXT NOT NULL,
      llm TEXT NOT NULL,
      options_json TEXT NOT NULL,
      summary_json TEXT
    );
    CREATE TABLE llm_calls (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      run_id INTEGER NOT NULL REFERENCES runs(id),
      step TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      request_json TEXT NOT NULL,
      response_json TEXT NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cost_usd REAL,
      UNIQUE(run_id, step)
    );
    CREATE TABLE run_candidates (
      run_id INTEGER NOT NULL REFERENCES runs(id),
      step TEXT NOT NULL,
      candidate_sha256 TEXT NOT NULL REFERENCES candidates(sha256),
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      PRIMARY KEY(run_id, step)
    );
    CREATE TABLE run_evaluations (
      run_id INTEGER NOT NULL REFERENCES runs(id),
      step TEXT NOT NULL,
      evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
      PRIMARY KEY(run_id, step)
    );
    CREATE TABLE decisions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      run_id INTEGER NOT NULL REFERENCES runs(id),
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      round INTEGER NOT NULL,
      step TEXT NOT NULL,
      kind TEXT NOT NULL,
      candidate_sha256 TEXT,
      detail_json TEXT NOT NULL,
      UNIQUE(run_id, step, kind)
    );
    )sql",
    // Benches (`kforge bench`): one row per problem of the suite, tied to its run or evaluation, so
    // a bench killed midway resumes with what is done and redoes nothing finished.
    R"sql(
    CREATE TABLE benches (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      status TEXT NOT NULL,
      mode TEXT NOT NULL,
      suite TEXT NOT NULL,
      target TEXT NOT NULL,
      options_json TEXT NOT NULL,
      summary_json TEXT
    );
    CREATE TABLE bench_problems (
      bench_id INTEGER NOT NULL REFERENCES benches(id),
      position INTEGER NOT NULL,
      name TEXT NOT NULL,
      problem TEXT NOT NULL,
      problem_sha256 TEXT NOT NULL,
      candidate TEXT,
      status TEXT NOT NULL,
      run_id INTEGER REFERENCES runs(id),
      check_evaluation_id INTEGER REFERENCES evaluations(id),
      evaluation_id INTEGER REFERENCES evaluations(id),
      outcome_json TEXT,
      updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
      PRIMARY KEY(bench_id, name)
    );
    )sql",
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw InternalError(fmt::format("store: {}", sqlite3_errmsg(db)));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& real_or_null(int i, const nlohmann::json& v) {
    if (v.is_number()) sqlite3_bind_double(stmt_, i, v.get<double>());
    else sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Statement& real_or_null(int i, const std::optional<double>& v) {
    if (v) sqlite3_bind_double(stmt_, i, *v);
    else sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Statement& null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Statement& integer(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw InternalError(fmt::format("store: {}", sqlite3_errmsg(sqlite3_db_handle(stmt_))));
  }
  std::string column_text(int i) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? p : "";
  }
  std::int64_t column_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  nlohmann::json column_json(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return nullptr;
    return nlohmann::json::parse(column_text(i));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

StoredEvaluation read_evaluation(const Statement& s) {
  StoredEvaluation e;
  e.id = s.column_int(0);
  e.created_at = s.column_text(1);
  e.status = s.column_text(2);
  e.candidate_sha256 = s.column_text(3);
  e.result = nlohmann::json::parse(s.column_text(4));
  return e;
}

}  // namespace

fs::path Store::default_path() { return state_dir() / "kforge.db"; }

Store::Store(const fs::path& path) : path_(path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw InputError(fmt::format("cannot open the store {}: {}", path.string(), msg));
  }
  sqlite3_busy_timeout(db_, 10000);  // several kforge processes may share one store
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA foreign_keys=ON");
  migrate();
}

Store::~Store() { sqlite3_close(db_); }

void Store::exec(const char* sql) {
  // The busy timeout covers most waits for another process, but not all: while a new store is being
  // set up (WAL mode, its first schema) SQLite can answer "busy" at once. Those are retried too.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (rc == SQLITE_OK) return;
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    if ((rc & 0xff) == SQLITE_BUSY && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    throw InternalError(fmt::format("store {}: {} (in: {:.60})", path_.string(), msg, sql));
  }
}

int Store::schema_version() const {
  Statement s(db_, "PRAGMA user_version");
  s.step();
  return static_cast<int>(s.column_int(0));
}

void Store::migrate() {
  exec("BEGIN IMMEDIATE");
  try {
    int version = schema_version();
    const int target = static_cast<int>(std::size(kMigrations));
    if (version > target)
      throw InputError(fmt::format("the store {} was written by a newer kforge (schema {} > {})", path_.string(), version, target));
    for (int v = version; v < target; ++v) exec(kMigrations[v]);
    exec(fmt::format("PRAGMA user_version = {}", target).c_str());
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::int64_t Store::insert_evaluation(const nlohmann::json& evaluation, const std::string& candidate_source) {
  const EvalView v = EvalView::decode(evaluation);  // the columns the evaluations are looked up by
  Statement(db_, "INSERT OR IGNORE INTO candidates(sha256, source) VALUES (?, ?)")
      .text(1, v.candidate_sha256)
      .text(2, candidate_source)
      .step();
  Statement ins(db_,
                "INSERT INTO evaluations(candidate_sha256, problem, problem_sha256, target, device, status, "
                "speedup_vs_eager, speedup_vs_compile, result_json) VALUES (?,?,?,?,?,?,?,?,?)");
  ins.text(1, v.candidate_sha256)
      .text(2, v.problem)
      .text(3, v.problem_sha256)
      .text(4, v.target)
      .text(5, v.device)
      .text(6, v.status)
      .real_or_null(7, v.speedup_vs_eager)
      .real_or_null(8, v.speedup_vs_compile)
      .text(9, evaluation.dump());
  ins.step();
  return sqlite3_last_insert_rowid(db_);
}

std::int64_t Store::add_evaluation(const nlohmann::json& evaluation, const std::string& candidate_source) {
  std::lock_guard lock(mutex_);
  exec("BEGIN IMMEDIATE");
  try {
    std::int64_t id = insert_evaluation(evaluation, candidate_source);
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<StoredEvaluation> Store::evaluation(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT id, created_at, status, candidate_sha256, result_json FROM evaluations WHERE id = ?");
  s.integer(1, id);
  if (!s.step()) return std::nullopt;
  return read_evaluation(s);
}

std::vector<StoredEvaluation> Store::evaluations_of(const std::string& sha) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT id, created_at, status, candidate_sha256, result_json FROM evaluations WHERE candidate_sha256 = ? "
              "ORDER BY id");
  s.text(1, sha);
  std::vector<StoredEvaluation> out;
  while (s.step()) out.push_back(read_evaluation(s));
  return out;
}

std::optional<std::string> Store::candidate_source(const std::string& sha) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT source FROM candidates WHERE sha256 = ?");
  s.text(1, sha);
  if (!s.step()) return std::nullopt;
  return s.column_text(0);
}

namespace {

const char* const kRunColumns =
    "SELECT id, created_at, updated_at, status, problem, problem_sha256, target, llm, options_json, summary_json "
    "FROM runs";

StoredRun read_run(const Statement& s) {
  StoredRun r;
  r.id = s.column_int(0);
  r.created_at = s.column_text(1);
  r.updated_at = s.column_text(2);
  r.status = s.column_text(3);
  r.problem = s.column_text(4);
  r.problem_sha256 = s.column_text(5);
  r.target = s.column_text(6);
  r.llm = s.column_text(7);
  r.options = s.column_json(8);
  r.summary = s.column_json(9);
  return r;
}

StoredLlmCall read_llm_call(const Statement& s) {
  StoredLlmCall c;
  c.step = s.column_text(0);
  c.created_at = s.column_text(1);
  c.request = nlohmann::json::parse(s.column_text(2));
  c.response = nlohmann::json::parse(s.column_text(3));
  c.input_tokens = s.column_int(4);
  c.output_tokens = s.column_int(5);
  return c;
}

}  // namespace

std::int64_t Store::create_run(const std::string& problem, const std::string& problem_sha256, const std::string& target,
                               const std::string& llm, const nlohmann::json& options) {
  std::lock_guard lock(mutex_);
  Statement(db_,
            "INSERT INTO runs(status, problem, problem_sha256, target, llm, options_json) VALUES ('running',?,?,?,?,?)")
      .text(1, problem)
      .text(2, problem_sha256)
      .text(3, target)
      .text(4, llm)
      .text(5, options.dump())
      .step();
  return sqlite3_last_insert_rowid(db_);
}

std::optional<StoredRun> Store::run(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, fmt::format("{} WHERE id = ?", kRunColumns).c_str());
  s.integer(1, id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

void Store::set_run_status(std::int64_t id, const std::string& status, const nlohmann::json& summary) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "UPDATE runs SET status = ?, summary_json = COALESCE(?, summary_json), "
              "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?");
  s.text(1, status);
  if (summary.is_null()) s.null(2);
  else s.text(2, summary.dump());
  s.integer(3, id).step();
}

void Store::add_llm_call(std::int64_t run_id, const std::string& step, const nlohmann::json& request,
                         const nlohmann::json& response) {
  std::lock_guard lock(mutex_);
  const nlohmann::json usage = response.value("usage", nlohmann::json::object());
  Statement(db_,
            "INSERT OR IGNORE INTO llm_calls(run_id, step, request_json, response_json, input_tokens, output_tokens, "
            "cost_usd) VALUES (?,?,?,?,?,?,?)")
      .integer(1, run_id)
      .text(2, step)
      .text(3, request.dump())
      .text(4, response.dump())
      .integer(5, usage.value("input_tokens", std::int64_t{0}))
      .integer(6, usage.value("output_tokens", std::int64_t{0}))
      .real_or_null(7, response.value("cost_usd", nlohmann::json()))
      .step();
}

std::optional<StoredLlmCall> Store::llm_call(std::int64_t run_id, const std::string& step) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT step, created_at, request_json, response_json, input_tokens, output_tokens FROM llm_calls "
              "WHERE run_id = ? AND step = ?");
  s.integer(1, run_id).text(2, step);
  if (!s.step()) return std::nullopt;
  return read_llm_call(s);
}

std::vector<StoredLlmCall> Store::llm_calls(std::int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT step, created_at, request_json, response_json, input_tokens, output_tokens FROM llm_calls "
              "WHERE run_id = ? ORDER BY id");
  s.integer(1, run_id);
  std::vector<StoredLlmCall> out;
  while (s.step()) out.push_back(read_llm_call(s));
  return out;
}

std::string Store::add_run_candidate(std::int64_t run_id, const std::string& step, const std::string& source) {
  std::lock_guard lock(mutex_);
  const std::string sha = sha256_hex(source);
  exec("BEGIN IMMEDIATE");
  try {
    Statement(db_, "INSERT OR IGNORE INTO candidates(sha256, source) VALUES (?, ?)").text(1, sha).text(2, source).step();
    Statement(db_, "INSERT OR IGNORE INTO run_candidates(run_id, step, candidate_sha256) VALUES (?,?,?)")
        .integer(1, run_id)
        .text(2, step)
        .text(3, sha)
        .step();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return sha;
}

std::optional<std::string> Store::run_candidate(std::int64_t run_id, const std::string& step) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, "SELECT candidate_sha256 FROM run_candidates WHERE run_id = ? AND step = ?");
  s.integer(1, run_id).text(2, step);
  if (!s.step()) return std::nullopt;
  return s.column_text(0);
}

std::int64_t Store::add_run_evaluation(std::int64_t run_id, const std::string& step, const nlohmann::json& evaluation,
                                       const std::string& candidate_source) {
  std::lock_guard lock(mutex_);
  if (auto existing = run_evaluation(run_id, step)) return existing->id;
  exec("BEGIN IMMEDIATE");
  try {
    std::int64_t id = insert_evaluation(evaluation, candidate_source);
    Statement(db_, "INSERT INTO run_evaluations(run_id, step, evaluation_id) VALUES (?,?,?)")
        .integer(1, run_id)
        .text(2, step)
        .integer(3, id)
        .step();
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<StoredEvaluation> Store::run_evaluation(std::int64_t run_id, const std::string& step) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT e.id, e.created_at, e.status, e.candidate_sha256, e.result_json FROM run_evaluations r "
              "JOIN evaluations e ON e.id = r.evaluation_id WHERE r.run_id = ? AND r.step = ?");
  s.integer(1, run_id).text(2, step);
  if (!s.step()) return std::nullopt;
  return read_evaluation(s);
}

std::vector<std::pair<std::string, StoredEvaluation>> Store::run_evaluations(std::int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT e.id, e.created_at, e.status, e.candidate_sha256, e.result_json, r.step FROM run_evaluations r "
              "JOIN evaluations e ON e.id = r.evaluation_id WHERE r.run_id = ? ORDER BY e.id");
  s.integer(1, run_id);
  std::vector<std::pair<std::string, StoredEvaluation>> out;
  while (s.step()) out.emplace_back(s.column_text(5), read_evaluation(s));
  return out;
}

void Store::add_decision(std::int64_t run_id, int round, const std::string& step, const std::string& kind,
                         const std::string& candidate_sha256, const nlohmann::json& detail) {
  std::lock_guard lock(mutex_);
  Statement(db_,
            "INSERT OR IGNORE INTO decisions(run_id, round, step, kind, candidate_sha256, detail_json) "
            "VALUES (?,?,?,?,?,?)")
      .integer(1, run_id)
      .integer(2, round)
      .text(3, step)
      .text(4, kind)
      .text(5, candidate_sha256)
      .text(6, detail.dump())
      .step();
}

std::vector<StoredDecision> Store::decisions(std::int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "SELECT id, created_at, round, step, kind, candidate_sha256, detail_json FROM decisions "
              "WHERE run_id = ? ORDER BY id");
  s.integer(1, run_id);
  std::vector<StoredDecision> out;
  while (s.step()) {
    StoredDecision d;
    d.id = s.column_int(0);
    d.created_at = s.column_text(1);
    d.round = static_cast<int>(s.column_int(2));
    d.step = s.column_text(3);
    d.kind = s.column_text(4);
    d.candidate_sha256 = s.column_text(5);
    d.detail = nlohmann::json::parse(s.column_text(6));
    out.push_back(std::move(d));
  }
  return out;
}

// --- Benches ---------------------------------------------------------------------------------

namespace {

const char* const kBenchColumns =
    "SELECT id, created_at, updated_at, status, mode, suite, target, options_json, summary_json FROM benches";

const char* const kBenchProblemColumns =
    "SELECT position, name, problem, problem_sha256, candidate, status, run_id, check_evaluation_id, evaluation_id, "
    "outcome_json, updated_at FROM bench_problems";

StoredBenchProblem read_bench_problem(const Statement& s) {
  StoredBenchProblem p;
  p.position = static_cast<int>(s.column_int(0));
  p.name = s.column_text(1);
  p.problem = s.column_text(2);
  p.problem_sha256 = s.column_text(3);
  p.candidate = s.column_text(4);
  p.status = s.column_text(5);
  p.run_id = s.column_int(6);
  p.check_evaluation_id = s.column_int(7);
  p.evaluation_id = s.column_int(8);
  p.outcome = s.column_json(9);
  p.updated_at = s.column_text(10);
  return p;
}

}  // namespace

std::int64_t Store::create_bench(const std::string& mode, const std::string& suite, const std::string& target,
                                 const nlohmann::json& options, const std::vector<StoredBenchProblem>& problems) {
  std::lock_guard lock(mutex_);
  exec("BEGIN IMMEDIATE");
  try {
    Statement(db_, "INSERT INTO benches(status, mode, suite, target, options_json) VALUES ('running',?,?,?,?)")
        .text(1, mode)
        .text(2, suite)
        .text(3, target)
        .text(4, options.dump())
        .step();
    std::int64_t id = sqlite3_last_insert_rowid(db_);
    for (const auto& p : problems) {
      Statement ins(db_,
                    "INSERT INTO bench_problems(bench_id, position, name, problem, problem_sha256, candidate, status) "
                    "VALUES (?,?,?,?,?,?,'pending')");
      ins.integer(1, id).integer(2, p.position).text(3, p.name).text(4, p.problem).text(5, p.problem_sha256);
      if (p.candidate.empty()) ins.null(6);
      else ins.text(6, p.candidate);
      ins.step();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<StoredBench> Store::bench(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, fmt::format("{} WHERE id = ?", kBenchColumns).c_str());
  s.integer(1, id);
  if (!s.step()) return std::nullopt;
  StoredBench b;
  b.id = s.column_int(0);
  b.created_at = s.column_text(1);
  b.updated_at = s.column_text(2);
  b.status = s.column_text(3);
  b.mode = s.column_text(4);
  b.suite = s.column_text(5);
  b.target = s.column_text(6);
  b.options = s.column_json(7);
  b.summary = s.column_json(8);
  return b;
}

void Store::set_bench_status(std::int64_t id, const std::string& status, const nlohmann::json& summary) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "UPDATE benches SET status = ?, summary_json = COALESCE(?, summary_json), "
              "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?");
  s.text(1, status);
  if (summary.is_null()) s.null(2);
  else s.text(2, summary.dump());
  s.integer(3, id).step();
}

void Store::set_bench_options(std::int64_t id, const nlohmann::json& options) {
  std::lock_guard lock(mutex_);
  Statement(db_, "UPDATE benches SET options_json = ? WHERE id = ?").text(1, options.dump()).integer(2, id).step();
}

std::vector<StoredBenchProblem> Store::bench_problems(std::int64_t bench_id) const {
  std::lock_guard lock(mutex_);
  Statement s(db_, fmt::format("{} WHERE bench_id = ? ORDER BY position", kBenchProblemColumns).c_str());
  s.integer(1, bench_id);
  std::vector<StoredBenchProblem> out;
  while (s.step()) out.push_back(read_bench_problem(s));
  return out;
}

void Store::update_bench_problem(std::int64_t bench_id, const StoredBenchProblem& p) {
  std::lock_guard lock(mutex_);
  Statement s(db_,
              "UPDATE bench_problems SET status = ?, run_id = ?, check_evaluation_id = ?, evaluation_id = ?, "
              "outcome_json = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE bench_id = ? AND name = ?");
  s.text(1, p.status);
  auto id_or_null = [&](int i, std::int64_t v) {
    if (v > 0) s.integer(i, v);
    else s.null(i);
  };
  id_or_null(2, p.run_id);
  id_or_null(3, p.check_evaluation_id);
  id_or_null(4, p.evaluation_id);
  if (p.outcome.is_null()) s.null(5);
  else s.text(5, p.outcome.dump());
  s.integer(6, bench_id).text(7, p.name).step();
}

std::int64_t Store::create_bench_run(std::int64_t bench_id, const std::string& name, const std::string& problem,
                                     const std::string& problem_sha256, const std::string& target,
                                     const std::string& llm, const nlohmann::json& options) {
  std::lock_guard lock(mutex_);
  exec("BEGIN IMMEDIATE");
  try {
    Statement(db_,
              "INSERT INTO runs(status, problem, problem_sha256, target, llm, options_json) VALUES ('running',?,?,?,?,?)")
        .text(1, problem)
        .text(2, problem_sha256)
        .text(3, target)
        .text(4, llm)
        .text(5, options.dump())
        .step();
    std::int64_t run_id = sqlite3_last_insert_rowid(db_);
    Statement(db_,
              "UPDATE bench_problems SET status = 'running', run_id = ?, "
              "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE bench_id = ? AND name = ?")
        .integer(1, run_id)
        .integer(2, bench_id)
        .text(3, name)
        .step();
    exec("COMMIT");
    return run_id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

}  // namespace kforge

#include "store/store.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include "util/errors.h"
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
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw InternalError(fmt::format("store {}: {}", path_.string(), msg));
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

std::int64_t Store::add_evaluation(const nlohmann::json& result, const std::string& candidate_source) {
  const std::string sha = result.value("candidate_sha256", "");
  exec("BEGIN IMMEDIATE");
  try {
    Statement(db_, "INSERT OR IGNORE INTO candidates(sha256, source) VALUES (?, ?)").text(1, sha).text(2, candidate_source).step();
    Statement ins(db_,
                  "INSERT INTO evaluations(candidate_sha256, problem, problem_sha256, target, device, status, "
                  "speedup_vs_eager, speedup_vs_compile, result_json) VALUES (?,?,?,?,?,?,?,?,?)");
    ins.text(1, sha)
        .text(2, result.value("problem", ""))
        .text(3, result.value("problem_sha256", ""))
        .text(4, result.value("target", ""))
        .text(5, result.value("device", ""))
        .text(6, result.value("status", ""))
        .real_or_null(7, result.value("speedup_vs_eager", nlohmann::json()))
        .real_or_null(8, result.value("speedup_vs_compile", nlohmann::json()))
        .text(9, result.dump());
    ins.step();
    std::int64_t id = sqlite3_last_insert_rowid(db_);
    exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<StoredEvaluation> Store::evaluation(std::int64_t id) const {
  Statement s(db_, "SELECT id, created_at, status, candidate_sha256, result_json FROM evaluations WHERE id = ?");
  s.integer(1, id);
  if (!s.step()) return std::nullopt;
  return read_evaluation(s);
}

std::vector<StoredEvaluation> Store::evaluations_of(const std::string& sha) const {
  Statement s(db_,
              "SELECT id, created_at, status, candidate_sha256, result_json FROM evaluations WHERE candidate_sha256 = ? "
              "ORDER BY id");
  s.text(1, sha);
  std::vector<StoredEvaluation> out;
  while (s.step()) out.push_back(read_evaluation(s));
  return out;
}

std::optional<std::string> Store::candidate_source(const std::string& sha) const {
  Statement s(db_, "SELECT source FROM candidates WHERE sha256 = ?");
  s.text(1, sha);
  if (!s.step()) return std::nullopt;
  return s.column_text(0);
}

}  // namespace kforge

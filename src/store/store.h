// kforge's SQLite store: every evaluation (and later every run, LLM call and decision) as it happens.
// Default location: <state dir>/kforge.db (~/.kforge/kforge.db); `--db` chooses another.
#pragma once

#include <filesystem>
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

class Store {
 public:
  // Opens (creating if needed) the database and brings its schema up to date.
  explicit Store(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  static std::filesystem::path default_path();

  // Records one evaluation with the candidate's source; returns its id.
  std::int64_t add_evaluation(const nlohmann::json& result, const std::string& candidate_source);
  std::optional<StoredEvaluation> evaluation(std::int64_t id) const;
  std::vector<StoredEvaluation> evaluations_of(const std::string& candidate_sha256) const;
  std::optional<std::string> candidate_source(const std::string& sha256) const;

  int schema_version() const;

 private:
  void exec(const char* sql);
  void migrate();
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace kforge

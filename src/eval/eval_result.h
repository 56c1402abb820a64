// EvalResult: the outcome of one evaluation, as a versioned JSON document (docs/eval-result.md).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_view.h"

namespace kforge {

// 2: the status environment_error (a worker could not start: no torch, no GPU), once problem_error;
// it also holds every field version 1 added within itself (1.1: speed_class, sol.hard, timing.timed_output).
inline constexpr int kEvalResultSchemaVersion = 2;
// Fields added within version 2 (docs/eval-result.md); none yet.
inline constexpr int kEvalResultSchemaMinor = 0;

// Status values, in the order an evaluation can reach them.
namespace status {
inline constexpr const char* kCorrect = "correct";
inline constexpr const char* kIncorrect = "incorrect";
inline constexpr const char* kCompiled = "compiled";
inline constexpr const char* kCompileError = "compile_error";
inline constexpr const char* kRuntimeError = "runtime_error";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kRejected = "rejected";
inline constexpr const char* kProblemError = "problem_error";
inline constexpr const char* kEnvironmentError = "environment_error";  // this machine cannot evaluate
}  // namespace status

struct EvalResult {
  nlohmann::json doc = nlohmann::json::object();

  std::string status() const { return decode_status(doc).value_or(status::kProblemError); }
  // error.message, "" without an error.
  std::string error_message() const;
  bool correct() const { return status() == status::kCorrect; }
  // Exit code of `kforge eval`: 0 correct, 1 the candidate failed, 2 the problem is at fault, 4 this
  // machine cannot evaluate (src/cli/exit_codes.h).
  int exit_code() const;
};

// The largest interquartile range relative to its median among the timed functions of an
// EvalResult (candidate, eager, compile); nullopt when nothing was timed.
std::optional<double> max_iqr_rel(const EvalView& v);
std::optional<double> max_iqr_rel(const nlohmann::json& doc);

// The spread of each timed function of an EvalResult: {"candidate": {"p25_ms", "p75_ms",
// "iqr_rel"}, "eager": ..., "compile": ...}, the functions that were timed only.
nlohmann::json timing_spread(const EvalView& v);
nlohmann::json timing_spread(const nlohmann::json& doc);

// A short human summary for the terminal (several lines, units on every number).
std::string summarize(const EvalResult& result);

}  // namespace kforge

// What the generation agent is told about a failed evaluation: compact and specific, so it can
// fix the candidate in one step. Compiler errors verbatim with file and line; for a wrong
// result, which output, the max error, its index and the shape; for a failed check, which check
// and why. Built from the EvalResult alone, read through its decoder (eval/eval_view.h): a field of
// the wrong type throws EvalResultError, an absent one is left out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::agent {

// Markdown paragraphs describing why the evaluation failed (empty for a correct one).
std::string functional_feedback(const nlohmann::json& eval_doc);

// One line for logs and the run's trajectory, e.g. "compile_error: relu.cpp:5:31: error: ...".
std::string one_line_summary(const nlohmann::json& eval_doc);

// "[0, 12345]" for a JSON array of integers (Python's list notation, as the worker prints it).
std::string format_index(const nlohmann::json& index);

}  // namespace kforge::agent

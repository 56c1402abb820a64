// The facts about the problem that every prompt carries: the reference source as it runs (the
// --set overrides written into the assignments they replace), the shapes and dtypes of its
// inputs, constructor arguments and outputs, and a few speed-of-light numbers instead of the raw
// JSON. The source and shapes come from `python -m kforge_worker describe` (the reference is trusted
// code), run once per run.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_view.h"

namespace kforge::loop {

struct ProblemFacts {
  std::string source;  // as it runs
  std::string shapes;  // Markdown list: inputs, constructor arguments, outputs
  std::string note;    // why the shapes are missing, when they are
};

// Runs the describe command with `python` once per `scratch` folder (the run's): its description, or
// the note of its failure, is kept there and taken again by a later call (a resumed run), so the
// prompts stay the same. On failure the file's own source and a note.
ProblemFacts describe_problem(const std::string& python, const std::filesystem::path& problem,
                              const std::map<std::string, std::string>& overrides, const std::filesystem::path& scratch);

// The Markdown list of a describe document's inputs, init_inputs and outputs.
std::string shapes_text(const nlohmann::json& description);

// The speed-of-light numbers of an evaluation that matter for a decision, as a few lines of text
// (empty without a bound).
std::string sol_text(const EvalView& evaluation);

}  // namespace kforge::loop

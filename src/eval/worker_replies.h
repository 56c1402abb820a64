// Typed views of the worker replies the evaluator acts on, each decoded once where it arrives, so
// the phases read fields rather than JSON keys (docs/worker-protocol.md describes the messages).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// The precision audit of one check: the candidate's error against a float64 reference.
struct PrecisionAudit {
  std::string verdict = "pass", policy;
  double ratio = 0, candidate_error = 0, limit = 0, k = 0, reference_error = 0;
  nlohmann::json raw;  // as the reference sent it, for the EvalResult

  static std::optional<PrecisionAudit> decode(const nlohmann::json& body);
};

// The reference's answer to "check": one trial's candidate outputs against its own.
struct CheckReply {
  bool match = false;
  nlohmann::json mismatch = nlohmann::json::object();  // {"message", ...} when !match
  std::string mismatch_message;
  nlohmann::json findings = nlohmann::json::array();   // runtime checks that fired
  std::optional<PrecisionAudit> precision;             // when the audit ran
  std::optional<std::string> input_mutation;           // what changed in the inputs, when they did
  double max_abs_error = 0;
  double max_rel_error = 0;
  nlohmann::json tolerances = nlohmann::json::object();
  std::optional<std::vector<std::string>> library_calls;  // allowed library operators the candidate ran

  static CheckReply decode(const nlohmann::json& body);
};

// The answer to "time" (candidate or reference): one block of timed repetitions.
struct TimedBlockReply {
  std::vector<double> times_ms;
  std::vector<std::pair<std::string, std::string>> events;  // runtime events seen during the block
  nlohmann::json tampered = nlohmann::json::array();        // patched objects seen during the block
  std::optional<nlohmann::json> device_state;               // clocks after the block (reference, GPU)
  std::vector<int> inputs_changed;                          // repetitions that left their inputs changed
  int inputs_changed_count = 0;
  std::vector<std::string> new_output_types;                // output types no correctness run returned
  double untimed_ms = 0;                                    // spent between repetitions (swaps, kept outputs)

  static TimedBlockReply decode(const nlohmann::json& body);
};

// The reference's answer to "make_trial".
struct TrialInputs {
  std::string inputs;  // path of the inputs file, as the reference wrote it
  nlohmann::json outputs;
  nlohmann::json input_bytes, output_bytes;
  nlohmann::json input_digests;  // per input, on the device path: what the candidate checks its inputs against

  static TrialInputs decode(const nlohmann::json& body);
};

}  // namespace kforge

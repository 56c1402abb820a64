#include "eval/worker_replies.h"

namespace kforge {

using json = nlohmann::json;

std::optional<PrecisionAudit> PrecisionAudit::decode(const json& p) {
  if (!p.is_object()) return std::nullopt;
  PrecisionAudit a;
  a.verdict = p.value("verdict", "pass");
  a.policy = p.value("policy", "");
  a.ratio = p.value("ratio", 0.0);
  a.candidate_error = p.value("candidate_error", 0.0);
  a.limit = p.value("limit", 0.0);
  a.k = p.value("k", 0.0);
  a.reference_error = p.value("reference_error", 0.0);
  a.raw = p;
  return a;
}

CheckReply CheckReply::decode(const json& body) {
  CheckReply r;
  r.match = body.value("match", false);
  if (body.contains("mismatch") && body["mismatch"].is_object()) {
    r.mismatch = body["mismatch"];
    r.mismatch_message = r.mismatch.value("message", "");
  }
  r.findings = body.value("findings", json::array());
  if (body.contains("precision")) r.precision = PrecisionAudit::decode(body["precision"]);
  if (body.contains("input_mutation")) r.input_mutation = body["input_mutation"].value("message", "");
  const json stats = body.value("stats", json::object());
  r.max_abs_error = stats.value("max_abs_error", 0.0);
  r.max_rel_error = stats.value("max_rel_error", 0.0);
  r.tolerances = stats.value("tolerances", json::object());
  if (body.contains("library_calls") && body["library_calls"].is_array())
    r.library_calls = body["library_calls"].get<std::vector<std::string>>();
  return r;
}

TimedBlockReply TimedBlockReply::decode(const json& body) {
  TimedBlockReply r;
  r.times_ms = body.value("times_ms", std::vector<double>{});
  for (const auto& e : body.value("events", json::array()))
    if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string())
      r.events.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
  r.tampered = body.value("tampered", json::array());
  if (body.contains("device_state")) r.device_state = body["device_state"];
  for (const auto& rep : body.value("inputs_changed", json::array()))
    if (rep.is_number_integer()) r.inputs_changed.push_back(rep.get<int>());
  r.inputs_changed_count = body.value("inputs_changed_count", static_cast<int>(r.inputs_changed.size()));
  if (body.contains("untimed_ms") && body["untimed_ms"].is_number()) r.untimed_ms = body["untimed_ms"].get<double>();
  for (const auto& t : body.value("new_output_types", json::array()))
    if (t.is_string()) r.new_output_types.push_back(t.get<std::string>());
  return r;
}

TrialInputs TrialInputs::decode(const json& body) {
  TrialInputs r;
  r.inputs = body.value("inputs", "");
  r.outputs = body.value("outputs", json());
  r.input_bytes = body.value("input_bytes", json());
  r.output_bytes = body.value("output_bytes", json());
  r.input_digests = body.value("input_digests", json());
  return r;
}

}  // namespace kforge

#include "eval/candidate_replies.h"

#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

namespace kforge {

using json = nlohmann::json;

namespace {

using Problem = std::optional<std::string>;

std::string excerpt(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 80) + "..." : s;
}

bool finite_number(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

// Each rule checks one field that is present (`required`: it must be).
Problem field(const json& body, const char* name, bool required, const std::function<bool(const json&)>& ok,
              const char* what) {
  if (!body.contains(name)) return required ? Problem(fmt::format("it has no '{}'", name)) : std::nullopt;
  if (!ok(body[name])) return fmt::format("'{}' is {}, not {}", name, excerpt(body[name]), what);
  return std::nullopt;
}

bool array_of(const json& v, const std::function<bool(const json&)>& each) {
  if (!v.is_array()) return false;
  for (const auto& e : v)
    if (!each(e)) return false;
  return true;
}

bool is_string(const json& v) { return v.is_string(); }
bool is_object(const json& v) { return v.is_object(); }
bool is_array(const json& v) { return v.is_array(); }
bool non_negative(const json& v) { return finite_number(v) && v.get<double>() >= 0; }
bool count(const json& v) { return v.is_number_integer() && v.get<std::int64_t>() >= 0; }
bool event(const json& v) { return v.is_array() && v.size() == 2 && v[0].is_string() && v[1].is_string(); }

Problem error_reply(const json& body) {
  if (!body.contains("error") || !body["error"].is_object()) return "a failure without an 'error' object";
  const json& e = body["error"];
  for (const char* name : {"kind", "message", "log", "traceback"})
    if (e.contains(name) && !e[name].is_string())
      return fmt::format("its error's '{}' is {}, not a string", name, excerpt(e[name]));
  return std::nullopt;
}

Problem load_candidate(const json& body, const json&) {
  if (auto p = field(body, "import_seconds", false, non_negative, "a time in seconds")) return p;
  if (auto p = field(body, "weights", false, is_object, "an object")) return p;
  if (auto p = field(body, "builds", false, is_array, "a list")) return p;
  if (auto p = field(body, "import_facts", true, is_object, "an object")) return p;
  const json& facts = body["import_facts"];
  if (auto p = field(facts, "events", false, [](const json& v) { return array_of(v, event); },
                     "a list of [event, detail] pairs"))
    return p;
  if (auto p = field(facts, "tampered", false, is_array, "a list")) return p;
  return field(facts, "precision_flags", false, is_object, "an object");
}

Problem run(const json& body, const json&) { return field(body, "seconds", true, non_negative, "a time in seconds"); }

Problem prepare_timing(const json& body, const json&) { return field(body, "timer", true, is_object, "an object"); }

Problem time_block(const json& body, const json& args) {
  if (auto p = field(body, "times_ms", true, [](const json& v) { return array_of(v, non_negative); },
                     "a list of times in ms"))
    return p;
  if (args.contains("reps") && args["reps"].is_number_integer() &&
      body["times_ms"].size() != args["reps"].get<std::size_t>())
    return fmt::format("it has {} times for {} repetitions", body["times_ms"].size(), args["reps"].get<int>());
  if (auto p = field(body, "events", false, [](const json& v) { return array_of(v, event); },
                     "a list of [event, detail] pairs"))
    return p;
  if (auto p = field(body, "tampered", false, is_array, "a list")) return p;
  if (auto p = field(body, "inputs_changed", false, [](const json& v) { return array_of(v, count); },
                     "a list of repetitions"))
    return p;
  if (auto p = field(body, "inputs_changed_count", false, count, "a count")) return p;
  if (auto p = field(body, "new_output_types", false, [](const json& v) { return array_of(v, is_string); },
                     "a list of type names"))
    return p;
  return field(body, "untimed_ms", false, non_negative, "a time in ms");
}

Problem timing_inputs(const json& body, const json&) { return field(body, "set", true, count, "an input set index"); }

Problem seconds_if_any(const json& body, const json&) {
  return field(body, "seconds", false, non_negative, "a time in seconds");
}

// Commands without a rule here (profiling, op_times, compile) are read by code that checks each field
// it takes; their replies still have to be objects that answer the request.
const std::map<std::string, std::function<Problem(const json&, const json&)>>& rules() {
  static const std::map<std::string, std::function<Problem(const json&, const json&)>> r = {
      {"load_candidate", load_candidate}, {"run", run},     {"prepare_timing", prepare_timing},
      {"time", time_block},               {"timing_inputs", timing_inputs}, {"warm", seconds_if_any}};
  return r;
}

}  // namespace

std::optional<std::string> candidate_reply_problem(const std::string& cmd, const json& args, std::uint64_t id,
                                                   const json& body) {
  if (!body.is_object()) return fmt::format("a reply that is not a JSON object: {}", excerpt(body));
  if (!body.contains("id") || !body["id"].is_number_unsigned() || body["id"].get<std::uint64_t>() != id)
    return fmt::format("a reply nobody asked for (id {}) while '{}' was pending", excerpt(body.value("id", json())),
                       cmd);
  if (!body.contains("cmd") || body["cmd"] != cmd)
    return fmt::format("a reply to '{}' where '{}' was asked", excerpt(body.value("cmd", json())), cmd);
  if (!body.contains("ok") || !body["ok"].is_boolean()) return fmt::format("a reply to '{}' without a boolean 'ok'", cmd);
  Problem p = !body["ok"].get<bool>() ? error_reply(body)
              : rules().count(cmd)    ? rules().at(cmd)(body, args)
                                      : std::nullopt;
  if (p) return fmt::format("a malformed reply to '{}': {}", cmd, *p);
  return std::nullopt;
}

}  // namespace kforge

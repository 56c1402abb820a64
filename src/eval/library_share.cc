#include "eval/library_share.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kforge {

using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

namespace {

// The strings of a JSON list (anything else in it, or a value that is not a list, gives none).
std::vector<std::string> strings(const json& list) {
  std::vector<std::string> out;
  if (list.is_array())
    for (const json& item : list)
      if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

}  // namespace

std::optional<double> library_share(const json& op_times, const std::vector<std::string>& operators) {
  const json seconds = op_times.value("seconds", json());
  if (!seconds.is_number() || !(seconds.get<double>() > 0)) return std::nullopt;
  const json ops = op_times.value("ops", json::object());
  double spent = 0;
  for (const std::string& name : operators)
    if (ops.is_object() && ops.contains(name) && ops[name].is_number()) spent += std::max(0.0, ops[name].get<double>());
  return std::clamp(spent / seconds.get<double>(), 0.0, 1.0);
}

std::string describe_library_calls(const std::vector<std::string>& operators, std::optional<double> share) {
  if (operators.empty()) return "";
  std::string text = fmt::format("{}", fmt::join(operators, ", "));
  if (share) text += fmt::format(" ({:.0f}% of the candidate's time)", 100 * *share);
  return text;
}

std::string describe_library_calls(const json& operators, const json& share) {
  return describe_library_calls(strings(operators),
                                share.is_number() ? std::optional<double>(share.get<double>()) : std::nullopt);
}

void measure_library_share(EvalRun& run) {
  if (!run.doc.contains("library_calls")) return;
  json& calls = run.doc["library_calls"];
  const std::vector<std::string> operators = strings(calls.value("operators", json::array()));
  if (operators.empty()) return;
  run.phase("timing the library calls it kept");
  WorkerReply r = run.cand->request("op_times", {{"reps", 3}}, Seconds(run.opt.timeout_s));
  std::optional<double> share = r.kind == WorkerReply::kOk ? library_share(r.body, operators) : std::nullopt;
  if (!share) {
    run.doc["notes"].push_back(fmt::format("the library calls' share of the candidate's time was not measured: {}",
                                           r.kind == WorkerReply::kOk ? "no call time in the reply" : reply_message(r)));
    return;
  }
  calls["share"] = *share;
  calls["share_method"] = "each operator of 3 forward calls timed from dispatch to end (the device synchronised "
                          "around it), in the candidate's process";
}

}  // namespace kforge

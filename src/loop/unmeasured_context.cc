#include "loop/unmeasured_context.h"

namespace kforge::loop {

using json = nlohmann::json;

namespace {

// Every number under `value` becomes kMeasured; the shape (which baselines were timed) stays.
void mask_numbers(json& value) {
  if (value.is_number()) {
    value = kMeasured;
  } else if (value.is_structured()) {
    for (auto& item : value) mask_numbers(item);
  }
}

void mask(json& object, const char* key) {
  if (object.is_object() && object.contains(key) && !object[key].is_null()) object[key] = kMeasured;
}

// A head-to-head verdict as far as it does not depend on the timings: a challenger that did not
// become the best was rejected (interval below 1) or undecided (interval around 1) by how the
// measurements fell; whether it became the best shows in the rest of the prompt anyway.
std::string unmeasured_verdict(const std::string& verdict) {
  return verdict == "rejected" || verdict == "undecided" ? "not kept" : verdict;
}

void mask_verdict(json& object) {
  if (object.is_object() && object.contains("verdict") && object["verdict"].is_string())
    object["verdict"] = unmeasured_verdict(object["verdict"].get<std::string>());
}

}  // namespace

json unmeasured_context(const json& ctx) {
  json out = ctx;
  if (out.contains("timing")) mask_numbers(out["timing"]);
  for (const char* key : {"speedup_vs_eager", "speedup_vs_compile", "profile", "profile_chart"}) mask(out, key);
  // Speed-of-light figures come from this machine's measured peaks: present or not, the same text.
  out["sol"] = kMeasured;
  // A profile that was asked for but failed (a timeout under load) reads as one that was taken.
  if (out.value("profile_requested", false)) out["profile"] = kMeasured;
  out.erase("flags");
  // The device and the baselines measured before round 0 (request_facts.h): this machine's figures.
  if (out.contains("device")) out["device"] = {{"measured", false}, {"spec", kMeasured}};
  if (out.contains("baseline")) out["baseline"] = {{"measured", false}, {"error", kMeasured}};
  if (out.contains("best")) {
    mask(out["best"], "vs_eager");
    mask(out["best"], "vs_compile");
  }
  for (const char* key : {"latest", "rejected"}) {
    if (!out.contains(key)) continue;
    mask(out[key], "reason");
    mask_verdict(out[key]);
  }
  if (out.contains("history") && out["history"].is_array()) {
    for (auto& row : out["history"]) {
      for (const char* key : {"vs_eager", "vs_compile", "vs_best"})
        if (row.value(key, "-") != "-") row[key] = kMeasured;
      if (row.contains("decision")) row["verdict"] = unmeasured_verdict(row["decision"].get<std::string>());
    }
  }
  return out;
}

llm::Message prompt_message(const agent::PromptLibrary& prompts, llm::Role role, const std::string& name,
                            const json& ctx) {
  llm::Message message = llm::Message::text(role, prompts.render(name, ctx));
  std::string unmeasured = prompts.render(name, unmeasured_context(ctx));
  if (unmeasured != message.joined_text()) message.match_text = std::move(unmeasured);
  return message;
}

}  // namespace kforge::loop

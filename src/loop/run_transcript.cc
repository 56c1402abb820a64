#include "util/clean_text.h"
#include "loop/run_transcript.h"

#include <algorithm>

#include <fmt/format.h>

namespace kforge::loop {

using json = nlohmann::json;

namespace {

// The text parts of a stored message; images are named, not inlined.
std::string message_text(const json& message) {
  const json& content = message.value("content", json());
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  for (const auto& part : content.is_array() ? content : json::array()) {
    if (!text.empty()) text += "\n";
    text += part.value("type", "") == "text" ? part.value("text", "") : fmt::format("[{} image]", part.value("media_type", ""));
  }
  return text;
}

// A fence longer than any run of backticks in `text`, so prompts that hold code blocks stay intact
// (and no control sequence of a candidate's reaches a terminal that shows the report).
std::string fenced(const std::string& text, const std::string& lang = "") { return markdown_code_block(text, lang); }

// The candidate step a generation or fix call wrote: "r1s0.gen" -> "r1s0", "r1s0.fix2" -> "r1s0.fix2".
std::string candidate_step(const std::string& call_step) {
  const std::string suffix = ".gen";
  if (call_step.size() > suffix.size() && call_step.compare(call_step.size() - suffix.size(), suffix.size(), suffix) == 0)
    return call_step.substr(0, call_step.size() - suffix.size());
  return call_step;
}

}  // namespace

json build_transcript(const Store& store, std::int64_t run_id) {
  json out = json::array();
  for (const auto& call : store.llm_calls(run_id)) {
    json entry = {{"step", call.step},
                  {"messages", json::array()},
                  {"reply", call.response.value("text", "")},
                  {"input_tokens", call.input_tokens},
                  {"output_tokens", call.output_tokens}};
    for (const auto& m : call.request.value("messages", json::array()))
      entry["messages"].push_back({{"role", m.value("role", "")}, {"text", message_text(m)}});
    const std::string step = candidate_step(call.step);
    if (auto sha = store.run_candidate(run_id, step))
      if (auto source = store.candidate_source(*sha))
        entry["candidate"] = {{"step", step}, {"sha256", *sha}, {"source", *source}};
    out.push_back(std::move(entry));
  }
  return out;
}

std::string transcript_markdown(const json& transcript) {
  std::string out = "\n## Transcript\n";
  if (transcript.empty()) return out + "\nNo LLM calls were recorded for this run.\n";
  for (const auto& e : transcript) {
    out += fmt::format("\n### {} ({} tokens in, {} out)\n", e.value("step", ""), e.value("input_tokens", 0),
                       e.value("output_tokens", 0));
    for (const auto& m : e["messages"]) out += fmt::format("\n**{}**\n\n{}", m.value("role", ""), fenced(m.value("text", "")));
    out += fmt::format("\n**reply**\n\n{}", fenced(e.value("reply", "")));
    if (e.contains("candidate"))
      out += fmt::format("\n**candidate {}** (sha256 {})\n\n{}", e["candidate"].value("step", ""),
                         e["candidate"].value("sha256", "").substr(0, 12), fenced(e["candidate"].value("source", ""), "python"));
  }
  return out;
}

}  // namespace kforge::loop

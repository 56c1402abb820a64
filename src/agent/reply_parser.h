// Turning a model's free-form reply into a candidate program. Real replies wrap code in prose,
// use several code blocks (C++ and Python), forget fences, get cut off at the token limit, or
// name the class after the reference. What can be repaired safely is repaired (and listed);
// what cannot becomes a `problem` that goes back to the model as format feedback.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::agent {

struct ParsedReply {
  bool ok = false;
  std::string code;                  // the complete candidate program (when ok)
  std::vector<std::string> repairs;  // what was changed to make it usable, for the log
  std::string problem;               // why the reply is unusable (when !ok)
  bool truncated = false;            // the reply was cut off mid-program
};

// `cut_off`: the provider reported that the reply hit its length limit.
ParsedReply parse_candidate_reply(std::string_view text, bool cut_off);

struct CodeBlock {
  std::string language;  // info string after the fence, lower-case ("python", "cpp", "")
  std::string code;
  bool closed = true;    // false when the text ended before the closing fence
};

// Fenced blocks (``` or ~~~) in order of appearance.
std::vector<CodeBlock> extract_code_blocks(std::string_view text);

}  // namespace kforge::agent

// Prompts are Mustache templates under prompts/ (one file per message kind), so wording can be
// changed without touching C++. Values come from a JSON object; nothing is HTML-escaped because
// the output goes to a model, not a browser.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge::agent {

class PromptLibrary {
 public:
  // Reads every `*.mustache` file of `dir`; a template's name is its file name without the
  // extension ("generate.user"). Throws InputError for a missing directory or a template that
  // does not parse.
  static PromptLibrary load(const std::filesystem::path& dir);

  // Renders template `name` with `context`. Throws InputError for an unknown name.
  std::string render(const std::string& name, const nlohmann::json& context) const;

  bool has(const std::string& name) const { return templates_.count(name) > 0; }

 private:
  std::map<std::string, std::string> templates_;
  std::filesystem::path dir_;
};

// Renders template text directly (used by load() to validate and by tests).
std::string render_template(const std::string& text, const nlohmann::json& context, const std::string& what = "template");

}  // namespace kforge::agent

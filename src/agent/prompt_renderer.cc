#include "agent/prompt_renderer.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <kainjow/mustache.hpp>

#include "util/errors.h"

namespace kforge::agent {

namespace fs = std::filesystem;
namespace mu = kainjow::mustache;

namespace {

mu::data to_data(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      mu::data d{mu::data::type::object};
      for (const auto& [k, v] : j.items()) d.set(k, to_data(v));
      return d;
    }
    case nlohmann::json::value_t::array: {
      mu::data d{mu::data::type::list};
      for (const auto& v : j) d.push_back(to_data(v));
      return d;
    }
    case nlohmann::json::value_t::string:
      return mu::data{j.get<std::string>()};
    case nlohmann::json::value_t::boolean:
      return mu::data{j.get<bool>()};
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return mu::data{std::to_string(j.get<std::int64_t>())};
    case nlohmann::json::value_t::number_float:
      return mu::data{fmt::format("{:.4g}", j.get<double>())};
    default:
      return mu::data{false};  // null: an empty section, an empty value
  }
}

std::string render_data(const std::string& text, const mu::data& data, const std::string& what) {
  mu::mustache tmpl{text};
  if (!tmpl.is_valid()) throw InputError(fmt::format("{}: {}", what, tmpl.error_message()));
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  std::string out = tmpl.render(data);
  if (!tmpl.is_valid()) throw InputError(fmt::format("{}: {}", what, tmpl.error_message()));
  return out;
}

}  // namespace

std::string render_template(const std::string& text, const nlohmann::json& context, const std::string& what) {
  return render_data(text, to_data(context), what);
}

PromptLibrary PromptLibrary::load(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw InputError(fmt::format("prompt directory not found: {}", dir.string()));
  PromptLibrary lib;
  lib.dir_ = dir;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".mustache") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    mu::mustache check{ss.str()};
    if (!check.is_valid()) throw InputError(fmt::format("{}: {}", entry.path().string(), check.error_message()));
    lib.templates_[entry.path().stem().string()] = ss.str();
  }
  return lib;
}

std::string PromptLibrary::render(const std::string& name, const nlohmann::json& context) const {
  auto it = templates_.find(name);
  if (it == templates_.end())
    throw InputError(fmt::format("prompt template {}.mustache not found in {}", name, dir_.string()));
  // Every template is also a partial: `{{> facts}}` renders facts.mustache with the same context,
  // so what several requests state comes from one file.
  mu::data data = to_data(context);
  if (data.is_object())
    for (const auto& [partial, text] : templates_)
      if (partial != name && !context.contains(partial)) data.set(partial, mu::partial{[text = text] { return text; }});
  return render_data(it->second, data, (dir_ / (name + ".mustache")).string());
}

}  // namespace kforge::agent

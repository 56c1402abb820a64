#include "target/target.h"

#include <algorithm>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "util/errors.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

std::string required_string(const toml::table& t, const char* key, const fs::path& file) {
  auto v = t[key].value<std::string>();
  if (!v || v->empty()) throw InputError(fmt::format("{}: missing string key '{}'", file.string(), key));
  return *v;
}

std::vector<std::string> string_list(const toml::node_view<const toml::node>& node) {
  std::vector<std::string> out;
  if (auto arr = node.as_array())
    for (const auto& el : *arr)
      if (auto s = el.value<std::string>()) out.push_back(*s);
  return out;
}

// A list of strings at `table.key`, or an InputError naming the key when it is something else.
std::vector<std::string> checked_list(const toml::node_view<const toml::node>& table, const char* key,
                                      const fs::path& file) {
  auto node = table[key];
  if (!node) return {};
  auto arr = node.as_array();
  bool strings = arr != nullptr;
  if (arr)
    for (const auto& el : *arr) strings = strings && el.is_string();
  if (!strings) throw InputError(fmt::format("{}: '{}' must be a list of strings", file.string(), key));
  return string_list(node);
}

Requirements load_requirements(const toml::node_view<const toml::node>& r, const fs::path& file) {
  Requirements req;
  req.python = checked_list(r, "python", file);
  req.commands = checked_list(r, "commands", file);
  req.files = checked_list(r, "files", file);
  req.device_nodes = checked_list(r, "device_nodes", file);
  // Device nodes are absolute paths under /dev; anything else would probe the wrong thing.
  for (const auto& node : req.device_nodes)
    if (node.rfind("/dev/", 0) != 0)
      throw InputError(fmt::format("{}: requires.device_nodes entry '{}' is not under /dev/", file.string(), node));
  req.hardware = r["hardware"].value_or(std::string{});
  if (!req.device_nodes.empty() && req.hardware.empty())
    throw InputError(fmt::format("{}: requires.device_nodes needs requires.hardware (what they stand for)",
                                 file.string()));
  req.compile_only = r["compile_only"].value_or(false);
  return req;
}

}  // namespace

Target load_target(const fs::path& dir) {
  fs::path file = dir / "target.toml";
  toml::table t;
  try {
    t = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: invalid TOML: {}", file.string(), e.source().begin.line, e.description()));
  }
  const toml::table& ct = t;
  Target target;
  target.dir = dir;
  target.name = required_string(ct, "name", file);
  if (target.name != dir.filename().string())
    throw InputError(fmt::format("{}: name '{}' differs from its folder '{}'", file.string(), target.name,
                                 dir.filename().string()));
  target.description = ct["description"].value_or(std::string{});
  target.language = required_string(ct, "language", file);
  target.device = required_string(ct, "device", file);
  target.compile_timeout_s = ct["compile_timeout_s"].value_or(300.0);
  target.example_reference = dir / ct["example"]["reference"].value_or(std::string("example_reference.py"));
  target.example_candidate = dir / ct["example"]["candidate"].value_or(std::string("example_candidate.py"));
  target.notes = dir / "notes.md";
  target.address_space_gb = ct["sandbox"]["address_space_gb"].value_or(0.0);
  target.env_pass = string_list(ct["env"]["pass"]);
  if (auto set = ct["env"]["set"].as_table())
    for (const auto& [k, v] : *set)
      if (auto s = v.value<std::string>()) target.env_set[std::string(k.str())] = *s;
  target.allowed_torch_calls = string_list(ct["checks"]["allowed_torch_calls"]);
  target.requirements = load_requirements(ct["requires"], file);
  target.device_lock.exclusive = ct["device_lock"]["exclusive"].value_or(false);
  target.device_lock.visible_devices_env = ct["device_lock"]["visible_devices_env"].value_or(std::string{});
  return target;
}

TargetRegistry TargetRegistry::load(const fs::path& targets_dir) {
  TargetRegistry registry;
  if (!fs::is_directory(targets_dir))
    throw InputError(fmt::format("targets directory not found: {}", targets_dir.string()));
  for (const auto& entry : fs::directory_iterator(targets_dir))
    if (entry.is_directory() && fs::exists(entry.path() / "target.toml"))
      registry.targets_.push_back(load_target(entry.path()));
  std::sort(registry.targets_.begin(), registry.targets_.end(),
            [](const Target& a, const Target& b) { return a.name < b.name; });
  return registry;
}

const Target* TargetRegistry::find(const std::string& name) const {
  for (const auto& t : targets_)
    if (t.name == name) return &t;
  return nullptr;
}

const Target& TargetRegistry::get(const std::string& name) const {
  if (const Target* t = find(name)) return *t;
  std::string known;
  for (const auto& t : targets_) known += (known.empty() ? "" : ", ") + t.name;
  throw InputError(fmt::format("unknown target '{}' (known: {})", name, known.empty() ? "none" : known));
}

}  // namespace kforge

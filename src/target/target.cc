#include "target/target.h"

#include <algorithm>
#include <regex>
#include <set>

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
  if (auto note = r["note"]; note) {
    if (!note.is_string())
      throw InputError(fmt::format("{}: requires.note must be a string (one line shown by `kforge targets`)",
                                   file.string()));
    req.note = *note.value<std::string>();
    if (req.note.empty() || req.note.find('\n') != std::string::npos || req.note.size() > 400)
      throw InputError(fmt::format("{}: requires.note must be one non-empty line of at most 400 characters",
                                   file.string()));
  }
  if (!req.device_nodes.empty() && req.hardware.empty())
    throw InputError(fmt::format("{}: requires.device_nodes needs requires.hardware (what they stand for)",
                                 file.string()));
  if (r["compile_only"])
    throw InputError(fmt::format("{}: requires.compile_only is now a table of its own: [compile_only] mode = "
                                 "\"build\" | \"interpreter\" | \"none\"",
                                 file.string()));
  return req;
}

// Top-level Python modules that a target's kernel_modules may not name: what they do is never a
// build, and their attributes are protected whatever the target.
bool kforge_own_module(const std::string& root) {
  static const std::set<std::string> own = {"kforge_worker", "kforge_kernels", "torch",   "time",   "builtins",
                                            "sys",           "os",             "gc",      "ctypes", "threading",
                                            "importlib",     "inspect",        "functools", "types", "socket",
                                            "subprocess",    "multiprocessing", "numpy"};
  return own.count(root) > 0;
}

// Variables kforge sets for the worker itself: a target may not redirect them.
bool reserved_variable(const std::string& name) {
  static const std::set<std::string> reserved = {
      "PATH",       "HOME",        "TMPDIR",       "USER",           "LOGNAME",
      "PYTHONPATH", "PYTHONHOME",  "PYTHONSTARTUP", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
      "LD_PRELOAD", "LD_LIBRARY_PATH", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME"};
  return reserved.count(name) > 0 || name.rfind("KFORGE_", 0) == 0;
}

void check_variable_name(const std::string& name, const std::string& where, const fs::path& file) {
  static const std::regex shape("[A-Z_][A-Z0-9_]*");
  if (!std::regex_match(name, shape))
    throw InputError(fmt::format("{}: {} '{}' is not an environment variable name (A-Z, 0-9, _)", file.string(),
                                 where, name));
  if (reserved_variable(name))
    throw InputError(fmt::format("{}: {} '{}' is set by kforge itself and cannot be declared by a target",
                                 file.string(), where, name));
}

// A table of string values, or an InputError naming the key.
std::map<std::string, std::string> string_table(const toml::node_view<const toml::node>& node, const std::string& key,
                                                const fs::path& file) {
  std::map<std::string, std::string> out;
  if (!node) return out;
  auto table = node.as_table();
  if (!table) throw InputError(fmt::format("{}: '{}' must be a table of strings", file.string(), key));
  for (const auto& [k, v] : *table) {
    auto s = v.value<std::string>();
    if (!s) throw InputError(fmt::format("{}: {}.{} must be a string", file.string(), key, k.str()));
    out[std::string(k.str())] = *s;
  }
  return out;
}

CompileOnlySpec load_compile_only(const toml::node_view<const toml::node>& c, const fs::path& file) {
  CompileOnlySpec spec;
  const std::string mode = c["mode"].value_or(std::string("none"));
  if (mode == "build") spec.mode = CompileOnlyMode::kBuild;
  else if (mode == "interpreter") spec.mode = CompileOnlyMode::kInterpreter;
  else if (mode != "none")
    throw InputError(fmt::format("{}: compile_only.mode '{}' is not one of build, interpreter, none", file.string(),
                                 mode));
  spec.env = string_table(c["env"], "compile_only.env", file);
  for (const auto& [name, value] : spec.env) check_variable_name(name, "compile_only.env variable", file);
  if (!spec.env.empty() && spec.mode != CompileOnlyMode::kInterpreter)
    throw InputError(fmt::format("{}: compile_only.env applies to mode = \"interpreter\" only", file.string()));
  return spec;
}

// Cache folders are relative paths under kforge's cache directory, never outside it and never one of
// the folders kforge keeps there for itself.
std::map<std::string, std::string> load_caches(const toml::node_view<const toml::node>& c, const fs::path& file) {
  static const std::regex part("[A-Za-z0-9_][A-Za-z0-9._-]*");
  static const std::set<std::string> kforge_own = {"build", "torch_extensions", "inductor", "launch-cache",
                                                   "xdg-cache", "tmp", "pch", "pycache", "peaks"};
  auto caches = string_table(c, "caches", file);
  for (const auto& [name, folder] : caches) {
    check_variable_name(name, "caches variable", file);
    auto bad = [&](const char* why) {
      return InputError(fmt::format("{}: caches.{} = \"{}\" {}; a cache folder is a relative path under kforge's "
                                    "cache directory, like \"triton\"",
                                    file.string(), name, folder, why));
    };
    if (folder.empty()) throw bad("is empty");
    if (folder.front() == '/') throw bad("is an absolute path");
    // Split by hand: fs::path would fold "a//b" and hide an empty part.
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      std::size_t slash = folder.find('/', start);
      parts.push_back(folder.substr(start, slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    for (const auto& p : parts) {
      if (p == "..") throw bad("leaves the cache directory (..)");
      if (!std::regex_match(p, part)) throw bad("has a part that is not a plain folder name");
    }
    if (kforge_own.count(parts.front())) throw bad("is a folder kforge keeps for itself");
  }
  return caches;
}

std::vector<std::string> load_sandbox_devices(const toml::node_view<const toml::node>& s, const fs::path& file) {
  auto devices = checked_list(s, "devices", file);
  for (const auto& pattern : devices) {
    bool allowed = false;
    std::string known;
    for (int i = 0; kSandboxDevicePatterns[i]; ++i) {
      allowed = allowed || pattern == kSandboxDevicePatterns[i];
      known += fmt::format("{}{}", known.empty() ? "" : ", ", kSandboxDevicePatterns[i]);
    }
    if (!allowed)
      throw InputError(fmt::format("{}: sandbox.devices entry '{}' is not a GPU device node kforge lets candidates "
                                   "open (allowed: {})",
                                   file.string(), pattern, known));
  }
  return devices;
}

}  // namespace

const char* const kSandboxDevicePatterns[] = {"/dev/nvidia*", "/dev/kfd", "/dev/dri/renderD*", nullptr};

const char* compile_only_mode_name(CompileOnlyMode mode) {
  switch (mode) {
    case CompileOnlyMode::kBuild: return "build";
    case CompileOnlyMode::kInterpreter: return "interpreter";
    case CompileOnlyMode::kNone: break;
  }
  return "none";
}

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
  target.sandbox_devices = load_sandbox_devices(ct["sandbox"], file);
  target.env_pass = string_list(ct["env"]["pass"]);
  if (auto set = ct["env"]["set"].as_table())
    for (const auto& [k, v] : *set)
      if (auto s = v.value<std::string>()) target.env_set[std::string(k.str())] = *s;
  target.allowed_torch_calls = string_list(ct["checks"]["allowed_torch_calls"]);
  target.preload = checked_list(ct["worker"], "preload", file);
  target.kernel_loops = checked_list(ct["checks"], "kernel_loops", file);
  target.kernel_modules = checked_list(ct["checks"], "kernel_modules", file);
  static const std::regex module("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*");
  for (const auto& name : target.preload)
    if (!std::regex_match(name, module))
      throw InputError(fmt::format("{}: worker.preload entry '{}' is not a Python module name", file.string(), name));
  for (const auto& name : target.kernel_modules) {
    if (!std::regex_match(name, module))
      throw InputError(fmt::format("{}: checks.kernel_modules entry '{}' is not a Python module name such as triton",
                                   file.string(), name));
    // Code of these modules may build unwatched: never kforge's own packages, torch or the clocks.
    const std::string root = name.substr(0, name.find('.'));
    if (kforge_own_module(root))
      throw InputError(fmt::format("{}: checks.kernel_modules entry '{}' names a module kforge watches itself; list "
                                   "only the target's own toolchain (its DSL or compiler package)",
                                   file.string(), name));
  }
  for (const auto& name : target.kernel_loops)
    if (!std::regex_match(name, module) || name.find('.') == std::string::npos)
      throw InputError(fmt::format("{}: checks.kernel_loops entry '{}' is not a dotted Python name such as "
                                   "helion.language.tile", file.string(), name));
  target.requirements = load_requirements(ct["requires"], file);
  target.compile_only = load_compile_only(ct["compile_only"], file);
  target.caches = load_caches(ct["caches"], file);
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

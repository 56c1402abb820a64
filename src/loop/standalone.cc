#include "loop/standalone.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "util/errors.h"
#include "util/files.h"

namespace kforge::loop {

namespace fs = std::filesystem;

namespace {

// The helper's source as the body of a """...""" literal.
std::string python_string_body(const std::string& source) {
  std::string out;
  for (char c : source) {
    if (c == '\\') out += "\\\\";
    else out += c;
  }
  std::string safe;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 3, "\"\"\"") == 0) {
      safe += "\"\"\\\"";
      i += 2;
    } else {
      safe += out[i];
    }
  }
  if (!safe.empty() && safe.back() == '"') safe += "\n";
  return safe;
}

struct Import {
  std::string module;  // helper name: native, ocl
  std::string bind;    // Python statement(s) that recreate the names the import bound
};

std::string var(const std::string& module) { return "_kforge_" + module; }

std::string strip(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  auto e = s.find_last_not_of(" \t\r");
  s.erase(e == std::string::npos ? 0 : e + 1);
  return s;
}

// Parses "a, b as c" into (name, alias) pairs.
std::vector<std::pair<std::string, std::string>> names(std::string list) {
  list.erase(std::remove(list.begin(), list.end(), '('), list.end());
  list.erase(std::remove(list.begin(), list.end(), ')'), list.end());
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    item = strip(item);
    if (item.empty()) continue;
    auto as = item.find(" as ");
    if (as == std::string::npos) out.emplace_back(item, item);
    else out.emplace_back(strip(item.substr(0, as)), strip(item.substr(as + 4)));
  }
  return out;
}

// Recognises the import forms of kforge's kernel libraries on one top-level line, under their
// package (kforge_kernels) or the compatibility names kforge_worker keeps for them.
// `packages` holds the package names already bound by an `import PACKAGE.LIBRARY` line: a later one
// adds its library to that namespace, as Python adds a submodule to its package, instead of
// binding the name afresh (which would lose the libraries imported before).
std::vector<Import> parse_import(const std::string& line, std::set<std::string>& packages, bool* matched) {
  static const std::regex from_pkg(R"(^from\s+(kforge_kernels|kforge_worker)\s+import\s+(.+?)\s*(#.*)?$)");
  static const std::regex from_mod(R"(^from\s+(kforge_kernels|kforge_worker)\.(\w+)\s+import\s+(.+?)\s*(#.*)?$)");
  static const std::regex import_mod(R"(^import\s+(kforge_kernels|kforge_worker)\.(\w+)(\s+as\s+(\w+))?\s*(#.*)?$)");
  std::smatch m;
  std::vector<Import> out;
  *matched = true;
  if (std::regex_match(line, m, from_pkg)) {
    for (auto& [name, alias] : names(m[2].str())) out.push_back({name, fmt::format("{} = {}", alias, var(name))});
  } else if (std::regex_match(line, m, from_mod)) {
    std::string module = m[2].str(), bind;
    for (auto& [name, alias] : names(m[3].str())) bind += fmt::format("{}{} = {}.{}", bind.empty() ? "" : "\n", alias, var(module), name);
    out.push_back({module, bind});
  } else if (std::regex_match(line, m, import_mod)) {
    const std::string package = m[1].str(), module = m[2].str();
    if (m[4].matched) out.push_back({module, fmt::format("{} = {}", m[4].str(), var(module))});
    else if (packages.insert(package).second)
      out.push_back({module, fmt::format("{} = _kforge_types.SimpleNamespace({}={})", package, module, var(module))});
    else out.push_back({module, fmt::format("{}.{} = {}", package, module, var(module))});
  } else {
    *matched = false;
  }
  return out;
}

}  // namespace

std::string make_standalone(const std::string& source, const fs::path& helper_dir, const std::string& header) {
  std::vector<std::string> lines;
  {
    std::stringstream ss(source);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
  }
  std::vector<std::string> body;
  std::vector<std::string> modules;  // in order of first use
  std::set<std::string> packages;     // bound by `import PACKAGE.LIBRARY` so far
  std::size_t prelude_at = std::string::npos;
  for (const auto& line : lines) {
    bool matched = false;
    auto imports = line.find("kforge_") != std::string::npos ? parse_import(line, packages, &matched) : std::vector<Import>{};
    if (!matched) {
      body.push_back(line);
      continue;
    }
    if (prelude_at == std::string::npos) prelude_at = body.size();
    for (const auto& imp : imports) {
      if (std::find(modules.begin(), modules.end(), imp.module) == modules.end()) modules.push_back(imp.module);
      body.push_back(imp.bind);
    }
  }

  std::string prelude;
  if (!modules.empty()) {
    prelude += "# kforge helper modules, inlined so that this file runs without kforge installed.\n";
    prelude += "import sys as _kforge_sys\nimport types as _kforge_types\n\n";
    prelude += "def _kforge_module(name, source):\n"
               "    module = _kforge_types.ModuleType(name)\n"
               "    module.__file__ = name.replace('.', '/') + '.py'\n"
               "    _kforge_sys.modules.setdefault(name, module)\n"
               "    exec(compile(source, module.__file__, 'exec'), module.__dict__)\n"
               "    return module\n\n";
    for (const auto& m : modules) {
      fs::path file = helper_dir / (m + ".py");
      if (!fs::is_regular_file(file))
        throw InputError(fmt::format("the candidate imports {}, which is not one of kforge's kernel libraries ({} not "
                                     "found)", m, file.string()));
      prelude += fmt::format("{} = _kforge_module(\"kforge_standalone.{}\", \"\"\"{}\"\"\")\n\n", var(m), m,
                             python_string_body(read_file(file)));
    }
  }

  std::string out;
  std::stringstream hs(header);
  for (std::string l; std::getline(hs, l);) out += l.empty() ? "#\n" : "# " + l + "\n";
  if (!header.empty()) out += "\n";
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (i == prelude_at) out += prelude;
    out += body[i] + "\n";
  }
  out += "\n\n# Drop-in replacement for the reference: `from this_file import Model`.\nModel = ModelNew\n";
  return out;
}

}  // namespace kforge::loop

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

// The kernel libraries a top-level import line names, under their package (kforge_kernels) or the
// compatibility name kforge_worker keeps for them ("from kforge_kernels import native, ocl as cl",
// "from kforge_worker.native import load", "import kforge_kernels.ocl as cl"). Empty when the line
// imports none.
std::vector<std::string> imported_libraries(const std::string& line) {
  static const std::regex from_pkg(R"(^from\s+(kforge_kernels|kforge_worker)\s+import\s+(.+?)\s*(#.*)?$)");
  static const std::regex from_mod(R"(^from\s+(kforge_kernels|kforge_worker)\.(\w+)\s+import\s+.+$)");
  static const std::regex import_mod(R"(^import\s+(kforge_kernels|kforge_worker)\.(\w+)(\s+as\s+\w+)?\s*(#.*)?$)");
  std::smatch m;
  std::vector<std::string> out;
  if (std::regex_match(line, m, from_pkg)) {
    std::string list = m[2].str();
    list.erase(std::remove(list.begin(), list.end(), '('), list.end());
    list.erase(std::remove(list.begin(), list.end(), ')'), list.end());
    std::stringstream ss(list);
    for (std::string item; std::getline(ss, item, ',');) {
      std::stringstream words(item);
      std::string name;
      if (words >> name) out.push_back(name);
    }
  } else if (std::regex_match(line, m, from_mod) || std::regex_match(line, m, import_mod)) {
    out.push_back(m[2].str());
  }
  return out;
}

}  // namespace

bool imports_kernel_libraries(const std::string& source) {
  std::stringstream ss(source);
  for (std::string l; std::getline(ss, l);)
    if (!imported_libraries(l).empty()) return true;
  return false;
}

std::string make_standalone(const std::string& source, const fs::path& helper_dir, const std::string& header) {
  std::string out;
  std::stringstream hs(header);
  for (std::string l; std::getline(hs, l);) out += l.empty() ? "#\n" : "# " + l + "\n";
  if (!header.empty()) out += "\n";
  std::stringstream ss(source);
  static const std::regex old_name(R"(\bkforge_worker\b)");
  for (std::string line; std::getline(ss, line);) {
    for (const auto& library : imported_libraries(line)) {
      if (!fs::is_regular_file(helper_dir / (library + ".py")))
        throw InputError(fmt::format("the candidate imports {}, which is not one of kforge's kernel libraries ({} not "
                                     "found)", library, (helper_dir / (library + ".py")).string()));
      // The libraries' own package: the folder written beside best.py holds no kforge_worker.
      line = std::regex_replace(line, old_name, "kforge_kernels");
    }
    out += line + "\n";
  }
  out += "\n\n# Drop-in replacement for the reference: `from this_file import Model`.\nModel = ModelNew\n";
  return out;
}

void write_kernel_libraries(const fs::path& helper_dir, const fs::path& out_dir) {
  const fs::path to = out_dir / "kforge_kernels";
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(helper_dir))
    if (entry.is_regular_file() && entry.path().extension() == ".py")
      fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing);
}

}  // namespace kforge::loop

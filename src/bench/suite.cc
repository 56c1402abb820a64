#include "bench/suite.h"

#include <glob.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge::bench {

namespace fs = std::filesystem;

namespace {

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool is_problem_file(const fs::path& p) {
  return p.extension() == ".py" && !p.filename().string().starts_with("_") && fs::is_regular_file(p);
}

std::vector<fs::path> from_directory(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_problem_file(e.path())) out.push_back(e.path());
  if (out.empty()) throw InputError(fmt::format("suite directory {} holds no problem (*.py) files", dir.string()));
  return out;
}

std::vector<fs::path> from_list(const fs::path& list) {
  std::ifstream in(list);
  if (!in) throw InputError(fmt::format("cannot read the suite list {}", list.string()));
  std::vector<fs::path> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    fs::path p = line.substr(b, e - b + 1);
    if (p.is_relative()) p = list.parent_path() / p;
    if (!fs::is_regular_file(p))
      throw InputError(fmt::format("{}:{}: problem file not found: {}", list.string(), n, p.string()));
    if (p.extension() != ".py")
      throw InputError(fmt::format("{}:{}: not a Python problem file: {}", list.string(), n, p.string()));
    out.push_back(p);
  }
  if (out.empty()) throw InputError(fmt::format("the suite list {} names no problem", list.string()));
  return out;
}

std::vector<fs::path> from_glob(const std::string& pattern) {
  glob_t g{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<fs::path> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (is_problem_file(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  if (out.empty()) throw InputError(fmt::format("no problem (*.py) file matches {}", pattern));
  return out;
}

}  // namespace

std::vector<SuiteProblem> discover_suite(const std::string& suite) {
  if (suite.empty()) throw InputError("give a SUITE: a directory of problems, a list file or a glob");
  std::vector<fs::path> paths;
  if (fs::is_directory(suite)) paths = from_directory(suite);
  else if (fs::is_regular_file(suite)) paths = from_list(suite);
  else if (is_glob(suite)) paths = from_glob(suite);
  else throw InputError(fmt::format("suite not found: {} (a directory, a list file or a glob)", suite));

  std::vector<SuiteProblem> out;
  std::set<std::string> names;
  for (const auto& p : paths) {
    SuiteProblem sp{p.stem().string(), fs::absolute(p).lexically_normal()};
    if (!names.insert(sp.name).second)
      throw InputError(fmt::format("two problems named {}.py in the suite; problem file names must be unique", sp.name));
    out.push_back(std::move(sp));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

fs::path match_candidate(const fs::path& candidates_dir, const SuiteProblem& problem) {
  fs::path c = candidates_dir / problem.path.filename();
  return fs::is_regular_file(c) ? fs::absolute(c).lexically_normal() : fs::path();
}

}  // namespace kforge::bench

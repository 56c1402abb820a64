#include "target/readiness.h"

#include <utility>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "util/errors.h"

namespace kforge {

const char* readiness_name(Readiness r) {
  switch (r) {
    case Readiness::kRunnable: return "runnable";
    case Readiness::kCompileOnly: return "compile-only";
    case Readiness::kNeedsHardware: return "needs hardware";
    case Readiness::kNotReady: return "not ready";
  }
  return "?";
}

ReadinessNeeds readiness_needs(const Target& target) {
  const auto file = target.dir / "target.toml";
  toml::table t;
  try {
    t = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: invalid TOML: {}", file.string(), e.source().begin.line, e.description()));
  }
  ReadinessNeeds needs;
  const toml::node_view<const toml::node> table = std::as_const(t)["readiness"];
  if (!table) return needs;
  if (!table.is_table()) throw InputError(fmt::format("{}: [readiness] must be a table", file.string()));
  auto list = [&](const char* key, std::vector<std::string>& out) {
    auto node = table[key];
    if (!node) return;
    auto* arr = node.as_array();
    if (!arr) throw InputError(fmt::format("{}: readiness.{} must be a list of strings", file.string(), key));
    for (const auto& el : *arr) {
      auto s = el.value<std::string>();
      if (!s) throw InputError(fmt::format("{}: readiness.{} must be a list of strings", file.string(), key));
      out.push_back(*s);
    }
  };
  list("python_modules", needs.python_modules);
  list("tools", needs.tools);
  if (auto node = table["compile_only"]) {
    if (!node.is_boolean()) throw InputError(fmt::format("{}: readiness.compile_only must be true or false", file.string()));
    needs.compile_only = node.value_or(false);
  }
  needs.hint = table["hint"].value_or(std::string{});
  return needs;
}

TargetReadiness target_readiness(const Target& target, const ReadinessNeeds& needs, const MachineFacts& facts) {
  TargetReadiness r;
  if (!facts.torch_problem.empty())
    r.problems.push_back(fmt::format("the worker's interpreter cannot import torch ({}): run scripts/setup.sh, or point "
                                     "--python / worker.python at an interpreter with torch",
                                     facts.torch_problem));
  for (const auto& m : needs.python_modules)
    if (!facts.python_modules.count(m))
      r.problems.push_back(fmt::format("Python module {} is not importable by the worker's interpreter: install it "
                                       "there (python -m pip install {}){}",
                                       m, m, needs.hint.empty() ? "" : "; " + needs.hint));
  for (const auto& tool : needs.tools)
    if (!facts.tools.count(tool))
      r.problems.push_back(fmt::format("{} is not on PATH: install it{}", tool, needs.hint.empty() ? "" : " (" + needs.hint + ")"));
  if (!r.problems.empty()) return r;  // software first: it is what the user can fix here

  if (target.device == "cuda" && !facts.has_cuda_device) {
    r.level = needs.compile_only ? Readiness::kCompileOnly : Readiness::kNeedsHardware;
    r.problems.push_back(std::string("no NVIDIA GPU visible to torch: run on a machine with one") +
                         (needs.compile_only ? "; here, `--compile-only` checks candidates without it" : ""));
    return r;
  }
  if (target.device != "cpu" && target.device != "cuda") {
    r.level = Readiness::kNeedsHardware;
    r.problems.push_back(fmt::format("kforge cannot tell whether this machine has a '{}' device", target.device));
    return r;
  }
  r.level = Readiness::kRunnable;
  return r;
}

}  // namespace kforge

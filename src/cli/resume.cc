#include "cli/resume.h"

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

void reject_settings_with_resume(const CLI::App& cmd, const std::set<std::string>& allowed, const std::string& what) {
  std::string accepted;
  for (const auto& name : allowed)
    if (name != "resume") accepted += (accepted.empty() ? "--" : ", --") + name;
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o == cmd.get_help_ptr()) continue;
    bool ok = false;
    for (const auto& l : o->get_lnames()) ok = ok || allowed.count(l);
    if (ok) continue;
    const std::string name = o->get_positional() || o->get_lnames().empty() ? o->get_name() : "--" + o->get_lnames().front();
    throw InputError(fmt::format("{} cannot be given with --resume: a resumed {} keeps the settings it was started with "
                                 "(with --resume: {}); start a new {} to change them",
                                 name, what, accepted, what));
  }
}

}  // namespace kforge

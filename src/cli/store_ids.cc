#include "cli/store_ids.h"

#include <regex>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

StoreId parse_store_id(const std::string& text, IdKind bare) {
  static const std::regex pattern(R"((run-|bench-)?([0-9]{1,18}))");
  std::smatch m;
  if (!std::regex_match(text, m, pattern) || std::stoll(m[2]) < 1)
    throw InputError(fmt::format("'{}' is neither a run (N or run-N) nor a bench (bench-N)", text));
  IdKind kind = m[1] == "bench-" ? IdKind::kBench : m[1] == "run-" ? IdKind::kRun : bare;
  return {kind, std::stoll(m[2])};
}

std::int64_t parse_id_of_kind(const std::string& text, IdKind kind) {
  StoreId id = parse_store_id(text, kind);
  if (id.kind != kind)
    throw InputError(fmt::format("'{}' is a {}; give a {} (N or {}-N)", text, id.kind == IdKind::kRun ? "run" : "bench",
                                 kind == IdKind::kRun ? "run" : "bench", kind == IdKind::kRun ? "run" : "bench"));
  return id.number;
}

}  // namespace kforge

// Ids of what the store keeps, as the user types them: a run is `N` or `run-N`, a bench `bench-N`
// (`kforge report`), and where only one kind makes sense (`run --resume`, `bench --resume`) the
// bare number means that kind.
#pragma once

#include <cstdint>
#include <string>

namespace kforge {

enum class IdKind { kRun, kBench };

struct StoreId {
  IdKind kind;
  std::int64_t number;
};

// "12" and "run-12" are run 12 (a bare number is `bare`'s kind), "bench-3" bench 3. Throws
// InputError on anything else, and on a number below 1.
StoreId parse_store_id(const std::string& text, IdKind bare = IdKind::kRun);

// The number of an id that must be of `kind`; throws InputError naming the id when it is another kind.
std::int64_t parse_id_of_kind(const std::string& text, IdKind kind);

}  // namespace kforge

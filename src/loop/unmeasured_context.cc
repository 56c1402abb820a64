#include "loop/unmeasured_context.h"

namespace kforge::loop {

using json = nlohmann::json;

namespace {

// Every number under `value` becomes kMeasured; the shape (which baselines were timed) stays.
void mask_numbers(json& value) {
  if (value.is_number()) {
    value = kMeasured;
  } else if (value.is_structured()) {
    for (auto& item : value) mask_numbers(item);
  }
}

void mask(json& object, const char* key) {
  if (object.is_object() && object.contains(key) && !object[key].is_null()) object[key] = kMeasured;
}

}  // namespace

json unmeasured_context(const json& ctx) {
  json out = ctx;
  if (out.contains("timing")) mask_numbers(out["timing"]);
  for (const char* key : {"speedup_vs_eager", "speedup_vs_compile", "sol", "profile", "profile_chart"}) mask(out, key);
  out.erase("flags");
  if (out.contains("best")) {
    mask(out["best"], "vs_eager");
    mask(out["best"], "vs_compile");
  }
  if (out.contains("latest")) mask(out["latest"], "reason");
  if (out.contains("rejected")) mask(out["rejected"], "reason");
  if (out.contains("history") && out["history"].is_array()) {
    for (auto& row : out["history"]) {
      for (const char* key : {"vs_eager", "vs_compile", "vs_best"})
        if (row.value(key, "-") != "-") row[key] = kMeasured;
      if (row.contains("decision")) row["verdict"] = row["decision"];  // without measurement flags
    }
  }
  return out;
}

}  // namespace kforge::loop

// `kforge doctor`: whether this machine can run kforge, and each target, with a fix for every
// problem. kforge itself is ready when its data, the worker's interpreter with torch and the store
// are usable; a target that needs hardware this machine lacks does not make it unready.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target/readiness.h"

namespace kforge {

enum class CheckLevel { kOk, kInfo, kWarn, kFail };  // kFail: kforge is not ready

struct DoctorCheck {
  std::string name;
  CheckLevel level = CheckLevel::kOk;
  std::string detail;  // what was found
  std::string fix;     // what to do (for warn and fail)
};

struct DoctorTarget {
  std::string name, device;
  Readiness readiness;
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  std::vector<DoctorTarget> targets;
  bool ready() const;
  nlohmann::json to_json() const;
  std::string text() const;
};

struct DoctorInputs {
  std::string python;  // resolved interpreter
  std::string store;   // the store's path
};

DoctorReport run_doctor(const DoctorInputs& inputs);

}  // namespace kforge

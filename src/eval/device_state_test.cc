#include "eval/device_state.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using json = nlohmann::json;

TEST(DeviceState, MinAndMaxOfEachClock) {
  json s = summarize_device_states({{{"sm_clock_mhz", 1980}, {"mem_clock_mhz", 2619}},
                                    {{"sm_clock_mhz", 1755}, {"mem_clock_mhz", 2619}},
                                    json::object()});
  EXPECT_EQ(s["samples"], 3);
  EXPECT_EQ(s["sm_clock_mhz"]["min"], 1755);
  EXPECT_EQ(s["sm_clock_mhz"]["max"], 1980);
  EXPECT_EQ(s["mem_clock_mhz"]["max"], 2619);
}

TEST(DeviceState, MissingReadingsAreLeftOut) {
  json s = summarize_device_states({{{"sm_clock_mhz", nullptr}}});
  EXPECT_EQ(s["samples"], 1);
  EXPECT_FALSE(s.contains("sm_clock_mhz"));
}

}  // namespace
}  // namespace kforge

#include "util/oom_kills.h"

#include <gtest/gtest.h>

namespace kforge {

TEST(OomKills, ReadsTheCounterOfMemoryEventsAndVmstat) {
  // cgroup v2 memory.events, as the kernel writes it.
  const char* events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
  EXPECT_EQ(counter_in(events, "oom_kill"), 2);
  EXPECT_EQ(counter_in(events, "oom"), 3);  // a key is matched whole, not as a prefix
  EXPECT_EQ(counter_in("nr_free_pages 1\noom_kill 17", "oom_kill"), 17);  // last line without a newline
  EXPECT_EQ(counter_in("oom_kill x\n", "oom_kill"), std::nullopt);
  EXPECT_EQ(counter_in("oom_kill_other 4\n", "oom_kill"), std::nullopt);
}

TEST(OomKills, ThisMachineHasACounter) {
  // Linux has had /proc/vmstat's oom_kill since 4.13; every kernel kforge runs on has one of the two.
  auto count = oom_kill_count();
  ASSERT_TRUE(count.has_value());
  EXPECT_GE(*count, 0);
}

}  // namespace kforge

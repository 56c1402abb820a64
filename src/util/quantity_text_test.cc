#include "util/quantity_text.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(QuantityText, CountsBeyondThirtyTwoBitsKeepTheirValue) {
  // 2^37 FLOPs (a 4096-cube GEMM's multiply-adds times two) once printed as "0 FLOPs" through an int.
  EXPECT_EQ(flop_text(137438953472.0), "137.4 GFLOP");
  EXPECT_EQ(flop_text(2.5e12), "2.5 TFLOP");
}

TEST(QuantityText, RatesAndSizesHaveOneSpelling) {
  EXPECT_EQ(flop_rate_text(1.457e14), "146 TFLOP/s");
  EXPECT_EQ(flop_rate_text(8.2e11), "820 GFLOP/s");
  EXPECT_EQ(bandwidth_text(4.6494e12), "4649 GB/s");
  EXPECT_EQ(bytes_text(3.36e8), "336 MB");
  EXPECT_EQ(bytes_text(512), "512 B");
}

}  // namespace
}  // namespace kforge

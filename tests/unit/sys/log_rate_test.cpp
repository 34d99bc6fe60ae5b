#include "sys/log_rate.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using xdpvhost::sys::worth_logging;

TEST(LogRate, FirstTenThenEveryPowerOfTen) {
  std::vector<std::uint64_t> logged;
  for (std::uint64_t n = 0; n <= 100000; ++n)
    if (worth_logging(n)) logged.push_back(n);
  const std::vector<std::uint64_t> expected{1, 2, 3,  4,   5,    6,     7,
                                            8, 9, 10, 100, 1000, 10000, 100000};
  EXPECT_EQ(logged, expected);
}

TEST(LogRate, MultiplesOfPowersOfTenAreNotLogged) {
  EXPECT_FALSE(worth_logging(20));
  EXPECT_FALSE(worth_logging(200));
  EXPECT_FALSE(worth_logging(3000));
  EXPECT_TRUE(worth_logging(std::uint64_t{10000000000000000000u}));
}

}  // namespace

#include <gtest/gtest.h>

#include <string>

#include "xsk/xsk_socket.hpp"

namespace xdpvhost::xsk {
namespace {

TEST(BindMode, ParsesTheConfigNamesAndRoundTrips) {
  for (const BindMode m : {BindMode::kAuto, BindMode::kZeroCopy, BindMode::kCopy}) {
    EXPECT_EQ(parse_bind_mode(to_string(m)), m);
  }
  EXPECT_EQ(parse_bind_mode("zero-copy"), BindMode::kZeroCopy);
  EXPECT_FALSE(parse_bind_mode("zc"));
  EXPECT_FALSE(parse_bind_mode(""));
}

TEST(WakeupResult, HasNames) {
  EXPECT_STREQ(to_string(WakeupResult::kAgain), "again");
  EXPECT_STREQ(to_string(WakeupResult::kNetDown), "net_down");
}

}  // namespace
}  // namespace xdpvhost::xsk

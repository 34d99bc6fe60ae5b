#include "xsk/mac_address.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::xsk {
namespace {

TEST(MacAddress, ParsesAndFormats) {
  const auto mac = parse_mac("02:AB:cd:00:10:ff");
  ASSERT_TRUE(mac.has_value());
  EXPECT_EQ(*mac, (MacAddress{0x02, 0xab, 0xcd, 0x00, 0x10, 0xff}));
  EXPECT_EQ(to_string(*mac), "02:ab:cd:00:10:ff");
  EXPECT_EQ(parse_mac("02-ab-cd-00-10-ff"), mac);
}

TEST(MacAddress, RejectsMalformedText) {
  EXPECT_FALSE(parse_mac(""));
  EXPECT_FALSE(parse_mac("02:ab:cd:00:10"));
  EXPECT_FALSE(parse_mac("02:ab:cd:00:10:fg"));
  EXPECT_FALSE(parse_mac("02:ab-cd:00:10:ff"));
  EXPECT_FALSE(parse_mac("02:ab:cd:00:10:ff:"));
}

TEST(MacAddress, GroupBitMeansMulticast) {
  EXPECT_TRUE(is_multicast(*parse_mac("ff:ff:ff:ff:ff:ff")));
  EXPECT_TRUE(is_multicast(*parse_mac("33:33:00:00:00:01")));
  EXPECT_TRUE(is_multicast(*parse_mac("01:00:5e:00:00:01")));
  EXPECT_FALSE(is_multicast(*parse_mac("02:00:00:00:00:01")));
}

}  // namespace
}  // namespace xdpvhost::xsk

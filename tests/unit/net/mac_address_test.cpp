#include "net/mac_address.hpp"

#include <gtest/gtest.h>

#include <unordered_set>

namespace xdpvhost::net {
namespace {

MacAddress mac(const char* text) {
  return MacAddress::parse(text).value();
}

TEST(MacAddress, ParsesAndFormats) {
  const auto parsed = MacAddress::parse("02:AB:cd:00:10:ff");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->bytes, (std::array<std::uint8_t, 6>{0x02, 0xab, 0xcd, 0x00, 0x10, 0xff}));
  EXPECT_EQ(parsed->to_string(), "02:ab:cd:00:10:ff");
  EXPECT_EQ(MacAddress::parse("02-ab-cd-00-10-ff"), parsed);
}

TEST(MacAddress, RejectsMalformedText) {
  EXPECT_FALSE(MacAddress::parse(""));
  EXPECT_FALSE(MacAddress::parse("02:ab:cd:00:10"));
  EXPECT_FALSE(MacAddress::parse("02:ab:cd:00:10:fg"));
  EXPECT_FALSE(MacAddress::parse("02:ab-cd:00:10:ff"));
  EXPECT_FALSE(MacAddress::parse("02:ab:cd:00:10:ff:"));
  EXPECT_FALSE(MacAddress::parse("02.ab.cd.00.10.ff"));
}

TEST(MacAddress, GroupBitMeansMulticast) {
  EXPECT_TRUE(mac("ff:ff:ff:ff:ff:ff").is_multicast());
  EXPECT_TRUE(mac("33:33:00:00:00:01").is_multicast());
  EXPECT_TRUE(mac("01:00:5e:00:00:01").is_multicast());
  EXPECT_FALSE(mac("02:00:00:00:00:01").is_multicast());
}

TEST(MacAddress, FromBytesKeyAndOrder) {
  const std::uint8_t frame[] = {0x52, 0x54, 0x00, 0x00, 0x00, 0x07, 0xff};
  const MacAddress m = MacAddress::from(frame);
  EXPECT_EQ(m, mac("52:54:00:00:00:07"));
  EXPECT_EQ(m.key(), 0x525400000007u);
  EXPECT_TRUE(MacAddress{}.is_zero());
  EXPECT_FALSE(m.is_zero());
  EXPECT_LT(mac("52:54:00:00:00:01"), mac("52:54:00:00:00:02"));
  std::unordered_set<std::uint64_t> keys{mac("52:54:00:00:00:01").key(),
                                         mac("52:54:00:00:01:00").key()};
  EXPECT_EQ(keys.size(), 2u);
}

}  // namespace
}  // namespace xdpvhost::net

// MacPrefix: the ranges mac_learning.prefixes lists.
#include "net/mac_prefix.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::net {
namespace {

MacAddress mac(const char* text) {
  return *MacAddress::parse(text);
}

TEST(MacPrefix, ParsesAnAddressAndALength) {
  const auto p = MacPrefix::parse("52:54:00:00:00:00/24");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->bits, 24);
  EXPECT_EQ(p->address, mac("52:54:00:00:00:00"));
  EXPECT_EQ(p->to_string(), "52:54:00:00:00:00/24");
  EXPECT_EQ(MacPrefix::parse("02:AB:00:00:00:00/16")->to_string(), "02:ab:00:00:00:00/16");
  EXPECT_EQ(MacPrefix::parse("02:00:00:00:00:01/48")->bits, 48);
}

TEST(MacPrefix, RefusesWhatIsNoPrefix) {
  for (const char* text :
       {"52:54:00:00:00:00", "52:54:00:00:00:00/", "52:54:00:00:00:00/0", "52:54:00:00:00:00/49",
        "52:54:00:00:00:00/2a", "52:54:00:00:00:00/+24", "52:54:00/24", "/24", "",
        "52:54:00:00:00:01/24",  // a bit set past the length
        "52:54:40:00:00:00/17"})
    EXPECT_FALSE(MacPrefix::parse(text)) << text;
}

TEST(MacPrefix, ContainsExactlyTheAddressesOfItsLeadingBits) {
  const auto oui = *MacPrefix::parse("52:54:00:00:00:00/24");
  EXPECT_TRUE(oui.contains(mac("52:54:00:00:00:00")));
  EXPECT_TRUE(oui.contains(mac("52:54:00:ff:ff:ff")));
  EXPECT_FALSE(oui.contains(mac("52:54:01:00:00:00")));
  EXPECT_FALSE(oui.contains(mac("02:78:76:00:00:01")));
  const auto odd = *MacPrefix::parse("02:00:00:00:00:00/7");  // 0000001x
  EXPECT_TRUE(odd.contains(mac("02:11:22:33:44:55")));
  EXPECT_TRUE(odd.contains(mac("03:11:22:33:44:55")));
  EXPECT_FALSE(odd.contains(mac("06:11:22:33:44:55")));
  const auto one = *MacPrefix::parse("02:00:00:00:00:01/48");
  EXPECT_TRUE(one.contains(mac("02:00:00:00:00:01")));
  EXPECT_FALSE(one.contains(mac("02:00:00:00:00:02")));
}

}  // namespace
}  // namespace xdpvhost::net

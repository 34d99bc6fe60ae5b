// The give-back of a same-node migration's MAC: the port that handed a MAC
// over may have it back without a migration of its own only within
// kMacGiveBackGrace (a failed migration resuming the source), and only from
// the port it went to.

#include "controller/mac_handover.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::controller {
namespace {

const net::MacAddress kMac{{0x02, 0, 0, 0, 0, 0x01}};
const net::MacAddress kOther{{0x02, 0, 0, 0, 0, 0x02}};

TEST(MacHandovers, TheSourceGetsItsMacBackOnlyWithinTheGracePeriod) {
  MacHandovers h;
  const MacHandovers::Clock::time_point t0{std::chrono::hours(1)};
  h.record(kMac, "src", "dst", t0);
  const auto just_before = t0 + kMacGiveBackGrace - std::chrono::milliseconds(1);
  EXPECT_TRUE(h.gives_back("src", "dst", kMac, t0));
  EXPECT_TRUE(h.gives_back("src", "dst", kMac, just_before));
  EXPECT_FALSE(h.gives_back("src", "dst", kMac, t0 + kMacGiveBackGrace))
      << "past the grace the source needs a migration like anyone";
  EXPECT_FALSE(h.gives_back("dst", "src", kMac, t0)) << "the taker gets nothing back";
  EXPECT_FALSE(h.gives_back("third", "dst", kMac, t0)) << "nor does another port";
  EXPECT_FALSE(h.gives_back("src", "dst", kOther, t0)) << "nor another MAC";
}

TEST(MacHandovers, ALaterHandOverOfTheMacReplacesTheEarlierOne) {
  MacHandovers h;
  const MacHandovers::Clock::time_point t0{std::chrono::hours(1)};
  h.record(kMac, "a", "b", t0);
  h.record(kOther, "c", "d", t0);
  h.record(kMac, "b", "e", t0 + std::chrono::seconds(5));  // it migrated on
  EXPECT_FALSE(h.gives_back("a", "b", kMac, t0 + std::chrono::seconds(6)));
  EXPECT_TRUE(h.gives_back("b", "e", kMac, t0 + std::chrono::seconds(6)));
  EXPECT_TRUE(h.gives_back("c", "d", kOther, t0 + std::chrono::seconds(6)));
  // Entries past the grace are dropped as new ones are recorded: the list
  // stays as short as the hand-overs of the last minute.
  h.record(kOther, "d", "f", t0 + kMacGiveBackGrace + std::chrono::seconds(10));
  EXPECT_FALSE(h.gives_back("b", "e", kMac, t0 + std::chrono::seconds(6)))
      << "the expired hand-over of kMac was dropped";
}

}  // namespace
}  // namespace xdpvhost::controller

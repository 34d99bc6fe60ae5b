#include "dataplane/switch_table.hpp"

#include <gtest/gtest.h>

#include "dataplane/guest_port.hpp"
#include "dataplane/uplink_queue_port.hpp"

namespace xdpvhost::dataplane {
namespace {

TEST(SwitchTable, GuestsAreFoundByMac) {
  const std::uint8_t mac[6] = {0x52, 0x54, 0, 0, 0, 1};
  GuestPort g(1, "g", Port::kNoUplinkId, GuestPort::Options{});
  SwitchTable t;
  t.add(SwitchEntry{&g, 1, 0, PortKind::kGuest, Port::kNoUplinkId, net::MacAddress::from(mac)});
  t.finish(1);
  ASSERT_NE(t.find_guest(net::MacAddress::from(mac)), nullptr);
  EXPECT_EQ(t.find_guest(net::MacAddress::from(mac))->port, &g);
  const std::uint8_t other[6] = {0x52, 0x54, 0, 0, 0, 2};
  EXPECT_EQ(t.find_guest(net::MacAddress::from(other)), nullptr);
  EXPECT_EQ(t.find(1)->port, &g);
  EXPECT_EQ(t.find(7), nullptr);
}

TEST(SwitchTable, AGuestSendsThroughTheUplinkQueueOnItsOwnThreadElseTheFirst) {
  UplinkQueuePort q0(10, "up0:q0", 0, UplinkQueuePort::Options{});
  UplinkQueuePort q1(11, "up0:q1", 0, UplinkQueuePort::Options{});
  UplinkQueuePort other(12, "up1:q0", 1, UplinkQueuePort::Options{});
  SwitchTable t;
  t.add(SwitchEntry{&q0, 10, 1, PortKind::kUplink, 0});
  t.add(SwitchEntry{&q1, 11, 2, PortKind::kUplink, 0});
  t.add(SwitchEntry{&other, 12, 0, PortKind::kUplink, 1});
  t.finish(3);
  EXPECT_EQ(t.uplink_queue(0, 1)->port, &q0);
  EXPECT_EQ(t.uplink_queue(0, 2)->port, &q1);
  EXPECT_EQ(t.uplink_queue(0, 0)->port, &q0) << "no queue on thread 0: the first";
  EXPECT_EQ(t.uplink_queue(1, 2)->port, &other);
  EXPECT_EQ(t.uplink_queue(5, 0), nullptr);
}

}  // namespace
}  // namespace xdpvhost::dataplane

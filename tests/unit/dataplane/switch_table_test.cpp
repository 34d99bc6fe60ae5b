#include "dataplane/switch_table.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

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

TEST(SwitchTable, AGuestOfSeveralQueueGroupsIsFoundOnceAndSpreadOverItsReceivingGroups) {
  const std::uint8_t mac[6] = {0x52, 0x54, 0, 0, 0, 1};
  GuestPort g0(1, "g", Port::kNoUplinkId, GuestPort::Options{});
  GuestPort g1(2, "g", Port::kNoUplinkId, GuestPort::Options{});
  GuestPort g2(3, "g", Port::kNoUplinkId, GuestPort::Options{});
  g1.set_group(1);
  g2.set_group(1);
  auto build = [&](std::vector<std::uint32_t> rx_groups) {
    SwitchTable t;
    SwitchEntry first{&g0, 1, 0, PortKind::kGuest, Port::kNoUplinkId, net::MacAddress::from(mac)};
    first.rx_groups = std::move(rx_groups);
    t.add(first);
    for (GuestPort* g : {&g1, &g2}) {
      SwitchEntry e{g,
                    g->id(),
                    static_cast<std::uint16_t>(g->id() - 1),
                    PortKind::kGuest,
                    Port::kNoUplinkId,
                    net::MacAddress::from(mac)};
      e.secondary = true;
      t.add(e);
    }
    t.finish(3);
    return t;
  };
  {
    const SwitchTable t = build({1, 2, 3});
    const SwitchEntry* e = t.find_guest(net::MacAddress::from(mac));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->port, &g0) << "the MAC finds the first group, not a secondary one";
    ASSERT_TRUE(t.spreads(*e));
    std::set<const Port*> hit;
    for (std::uint32_t h = 0; h < 64; ++h) {
      const SwitchEntry& to = t.rx_group(*e, h);
      EXPECT_EQ(to.port, (std::array<const Port*, 3>{&g0, &g1, &g2})[group_for_flow(h, 3)]);
      hit.insert(to.port);
    }
    EXPECT_EQ(hit.size(), 3u);
  }
  {
    // Group 1 lost its last enabled RX queue.
    const SwitchTable t = build({1, 3});
    const SwitchEntry* e = t.find_guest(net::MacAddress::from(mac));
    for (std::uint32_t h = 0; h < 64; ++h) EXPECT_NE(t.rx_group(*e, h).port, &g1);
  }
  {
    // Only the first group receives: no spreading, no hashing.
    const SwitchTable t = build({1});
    const SwitchEntry* e = t.find_guest(net::MacAddress::from(mac));
    EXPECT_FALSE(t.spreads(*e));
    EXPECT_EQ(t.rx_group(*e, 12345).port, &g0);
  }
}

TEST(SwitchTable, EachUplinkIsAnL2DomainOfItsOwnUnlessJoined) {
  GuestPort a(1, "a", 0, GuestPort::Options{});
  GuestPort b(2, "b", 1, GuestPort::Options{});
  GuestPort c(3, "c", 2, GuestPort::Options{});
  GuestPort alone(4, "alone", Port::kNoUplinkId, GuestPort::Options{});
  GuestPort alone2(5, "alone2", Port::kNoUplinkId, GuestPort::Options{});
  UplinkQueuePort up0(10, "up0:q0", 0, UplinkQueuePort::Options{});
  UplinkQueuePort up1(11, "up1:q0", 1, UplinkQueuePort::Options{});
  auto build = [&](L2Domains joined) {
    SwitchTable t;
    for (GuestPort* g : {&a, &b, &c, &alone, &alone2})
      t.add(SwitchEntry{g, g->id(), 0, PortKind::kGuest, g->uplink()});
    t.add(SwitchEntry{&up0, 10, 0, PortKind::kUplink, 0});
    t.add(SwitchEntry{&up1, 11, 0, PortKind::kUplink, 1});
    t.finish(1, std::move(joined));
    return t;
  };
  {
    const SwitchTable t = build({});
    EXPECT_FALSE(t.reaches(a, *t.find(2))) << "uplink 0's guest reached uplink 1's";
    EXPECT_FALSE(t.reaches(b, *t.find(1)));
    EXPECT_FALSE(t.reaches(alone, *t.find(1))) << "a guest without uplink reached uplink 0's";
    EXPECT_FALSE(t.reaches(a, *t.find(4)));
    EXPECT_TRUE(t.reaches(alone, *t.find(5))) << "guests without uplink are one domain";
    EXPECT_TRUE(t.reaches(up0, *t.find(1)));
    EXPECT_FALSE(t.reaches(up0, *t.find(2)));
    EXPECT_EQ(t.domain_of(1), 1u);
  }
  {
    // Uplink 1 joins uplink 0's domain; uplink 2 stays apart.
    const SwitchTable t = build({{1, 0}});
    EXPECT_TRUE(t.reaches(a, *t.find(2)));
    EXPECT_TRUE(t.reaches(b, *t.find(1)));
    EXPECT_FALSE(t.reaches(c, *t.find(1)));
    EXPECT_FALSE(t.reaches(b, *t.find(3)));
    EXPECT_EQ(t.find(2)->domain, 0u);
    // One uplink's wire never reaches the other's guests.
    EXPECT_FALSE(t.reaches(up0, *t.find(2)));
    EXPECT_FALSE(t.reaches(up1, *t.find(1)));
    EXPECT_TRUE(t.reaches(up1, *t.find(2)));
  }
}

}  // namespace
}  // namespace xdpvhost::dataplane

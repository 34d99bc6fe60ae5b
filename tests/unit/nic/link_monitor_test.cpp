// LinkMonitor's message parsing and LinkStateTable's transitions, fed with
// rtnetlink messages built the way the kernel lays them out. The
// integration suite drives a real monitor with real interfaces.
#include "nic/link_monitor.hpp"

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <vector>

namespace xdpvhost::nic {
namespace {

struct Message {
  std::vector<char> buf = std::vector<char>(1024);
  nlmsghdr* nlh = nullptr;
};

Message link_message(std::uint16_t type, int ifindex, unsigned flags, const char* name,
                     const char* address = nullptr) {
  Message m;
  m.nlh = mnl_nlmsg_put_header(m.buf.data());
  m.nlh->nlmsg_type = type;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(m.nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = flags;
  if (name != nullptr) mnl_attr_put_strz(m.nlh, IFLA_IFNAME, name);
  if (address != nullptr) {
    const auto mac = net::MacAddress::parse(address);
    mnl_attr_put(m.nlh, IFLA_ADDRESS, mac->bytes.size(), mac->data());
  }
  return m;
}

constexpr unsigned kUp = IFF_UP | IFF_RUNNING;

TEST(LinkMessage, ParsesIndexFlagsAndName) {
  const Message m = link_message(RTM_NEWLINK, 7, IFF_UP | IFF_BROADCAST, "eth1");
  LinkMessage out;
  ASSERT_TRUE(parse_link_message(m.nlh, out));
  EXPECT_FALSE(out.deleted);
  EXPECT_EQ(out.ifindex, 7);
  EXPECT_EQ(out.flags, unsigned{IFF_UP | IFF_BROADCAST});
  EXPECT_EQ(out.ifname, "eth1");

  const Message d = link_message(RTM_DELLINK, 7, 0, "eth1");
  ASSERT_TRUE(parse_link_message(d.nlh, out));
  EXPECT_TRUE(out.deleted);
}

TEST(LinkMessage, ParsesAnEthernetAddress) {
  LinkMessage out;
  const Message m = link_message(RTM_NEWLINK, 7, kUp, "eth1", "02:78:76:00:00:01");
  ASSERT_TRUE(parse_link_message(m.nlh, out));
  EXPECT_EQ(out.address, net::MacAddress::parse("02:78:76:00:00:01"));
  // Another length (a tunnel's IPv4 address, say) is no MAC.
  Message t = link_message(RTM_NEWLINK, 8, kUp, "gre1");
  const std::uint8_t ipv4[4] = {10, 0, 0, 1};
  mnl_attr_put(t.nlh, IFLA_ADDRESS, sizeof ipv4, ipv4);
  ASSERT_TRUE(parse_link_message(t.nlh, out));
  EXPECT_FALSE(out.address);
}

TEST(LinkMessage, RejectsOtherMessagesAndTruncation) {
  Message m = link_message(RTM_NEWADDR, 7, 0, "eth1");
  LinkMessage out;
  EXPECT_FALSE(parse_link_message(m.nlh, out));
  m = link_message(RTM_NEWLINK, 7, 0, "eth1");
  m.nlh->nlmsg_len = sizeof(nlmsghdr) + 4;  // shorter than ifinfomsg
  EXPECT_FALSE(parse_link_message(m.nlh, out));
}

class Transitions : public ::testing::Test {
 protected:
  std::vector<LinkEvent> feed(std::uint16_t type, int ifindex, unsigned flags, const char* name,
                              const char* address = nullptr) {
    const Message m = link_message(type, ifindex, flags, name, address);
    LinkMessage msg;
    EXPECT_TRUE(parse_link_message(m.nlh, msg));
    std::vector<LinkEvent> out;
    table_.apply(msg, out);
    return out;
  }
  LinkStateTable table_;
};

TEST_F(Transitions, FirstSightingIsAdded) {
  const auto ev = feed(RTM_NEWLINK, 3, kUp, "up0");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, LinkEvent::Kind::kAdded);
  EXPECT_TRUE(ev[0].up);
  EXPECT_EQ(ev[0].ifname, "up0");
}

TEST_F(Transitions, UpAndDownNeedAdminUpAndCarrier) {
  feed(RTM_NEWLINK, 3, 0, "up0");
  EXPECT_TRUE(feed(RTM_NEWLINK, 3, IFF_UP, "up0").empty());  // no carrier yet
  auto ev = feed(RTM_NEWLINK, 3, kUp, "up0");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, LinkEvent::Kind::kUp);
  EXPECT_TRUE(feed(RTM_NEWLINK, 3, kUp | IFF_PROMISC, "up0").empty());  // other flag changes
  ev = feed(RTM_NEWLINK, 3, IFF_UP, "up0");                             // carrier lost
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, LinkEvent::Kind::kDown);
  EXPECT_FALSE(ev[0].up);
}

TEST_F(Transitions, RenameKeepsTheIndex) {
  feed(RTM_NEWLINK, 3, kUp, "up0");
  const auto ev = feed(RTM_NEWLINK, 3, kUp, "uplink");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, LinkEvent::Kind::kRenamed);
  EXPECT_EQ(ev[0].ifname, "uplink");
  LinkEvent state;
  EXPECT_TRUE(table_.lookup("uplink", state));
  EXPECT_FALSE(table_.lookup("up0", state));
}

TEST_F(Transitions, DeleteReportsTheKnownNameOnce) {
  feed(RTM_NEWLINK, 3, kUp, "up0");
  auto ev = feed(RTM_DELLINK, 3, 0, nullptr);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, LinkEvent::Kind::kDeleted);
  EXPECT_EQ(ev[0].ifname, "up0");
  EXPECT_TRUE(feed(RTM_DELLINK, 3, 0, nullptr).empty());
  EXPECT_EQ(table_.size(), 0u);
}

TEST_F(Transitions, AnInterfaceIsFoundByItsAddressWhileItHasIt) {
  const auto a = *net::MacAddress::parse("02:78:76:00:00:01");
  const auto b = *net::MacAddress::parse("02:78:76:00:00:09");
  feed(RTM_NEWLINK, 3, kUp, "up0", "02:78:76:00:00:01");
  feed(RTM_NEWLINK, 4, kUp, "up1", "02:78:76:00:00:02");
  EXPECT_EQ(table_.interface_with(a), "up0");
  EXPECT_FALSE(table_.interface_with(b));
  feed(RTM_NEWLINK, 3, kUp, "up0");  // a message without the address keeps it
  EXPECT_EQ(table_.interface_with(a), "up0");
  feed(RTM_NEWLINK, 3, kUp, "up0", "02:78:76:00:00:09");  // ip link set up0 address ...
  EXPECT_FALSE(table_.interface_with(a));
  EXPECT_EQ(table_.interface_with(b), "up0");
  feed(RTM_DELLINK, 3, 0, nullptr);
  EXPECT_FALSE(table_.interface_with(b));
}

TEST_F(Transitions, ResyncReportsLinksThatVanished) {
  feed(RTM_NEWLINK, 3, kUp, "up0");
  feed(RTM_NEWLINK, 4, kUp, "up1");
  std::vector<LinkEvent> out;
  table_.forget_missing({4}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, LinkEvent::Kind::kDeleted);
  EXPECT_EQ(out[0].ifindex, 3);
  EXPECT_EQ(table_.size(), 1u);
}

}  // namespace
}  // namespace xdpvhost::nic

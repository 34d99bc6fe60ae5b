// Feature and protocol negotiation with QEMU's exact message sequence.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::integration {
namespace {

using fe::vhost_user::ProtocolFeature;
using fe::vhost_user::Request;
using virtio::Feature;
namespace vu = fe::vhost_user;

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class Negotiation : public DaemonTest {};

TEST_F(Negotiation, OffersWhatALinuxGuestUsesIncludingSegmentationOffload) {
  start_daemon({port("vm1", 1)});
  auto g = connect_guest("vm1");
  ASSERT_TRUE(g);
  const std::uint64_t offered = g->offered_features();
  for (Feature f : {Feature::kVersion1, Feature::kNetMrgRxbuf, Feature::kRingEventIdx,
                    Feature::kRingIndirectDesc, Feature::kNetCsum, Feature::kNetGuestCsum,
                    Feature::kVhostUserProtocolFeatures, Feature::kAnyLayout, Feature::kNetHostTso4,
                    Feature::kNetHostTso6, Feature::kNetHostEcn, Feature::kNetGuestTso4,
                    Feature::kNetGuestTso6, Feature::kNetGuestEcn})
    EXPECT_TRUE(virtio::has(offered, f))
        << "feature bit " << static_cast<unsigned>(f) << " not offered";
  // UFO would need IP fragmentation; no packed rings, control queue or MQ
  // with one pair.
  for (Feature f : {Feature::kNetHostUfo, Feature::kNetGuestUfo, Feature::kRingPacked,
                    Feature::kNetCtrlVq, Feature::kNetMq})
    EXPECT_FALSE(virtio::has(offered, f))
        << "feature bit " << static_cast<unsigned>(f) << " offered";
  EXPECT_TRUE(vu::has(g->offered_protocol_features(), ProtocolFeature::kReplyAck));
  EXPECT_TRUE(vu::has(g->acked_protocol_features(), ProtocolFeature::kReplyAck));
  // BACKEND_REQ and CONFIGURE_MEM_SLOTS are not offered (their messages are unsupported).
  EXPECT_FALSE(vu::has(g->offered_protocol_features(), ProtocolFeature::kBackendReq));
  EXPECT_FALSE(vu::has(g->offered_protocol_features(), ProtocolFeature::kConfigureMemSlots));

  const auto detail = port_get("vm1");
  EXPECT_EQ(detail.at("state"), "running");
  EXPECT_EQ(detail.at("features"), hex(g->acked_features()));
  EXPECT_EQ(detail.at("protocol_features"), hex(g->acked_protocol_features()));
  ASSERT_EQ(detail.at("queues").size(), 2u) << detail.dump();
  for (const auto& q : detail.at("queues")) {
    EXPECT_EQ(q.at("state"), "enabled") << q.dump();
    EXPECT_EQ(q.at("size"), 256) << q.dump();
  }
}

TEST_F(Negotiation, QemuSequenceIsAcceptedMessageByMessage) {
  start_daemon({port("vm1", 1), port("vm2", 2)});
  fe::NegotiateOptions o;
  o.ack_all = true;  // every request without a reply of its own is acked: a NACK fails negotiate
  auto a = connect_guest("vm1", o);
  auto b = connect_guest("vm2", o);
  ASSERT_TRUE(a && b);

  // What was sent is QEMU 7.2's order for one queue pair with the protocol
  // features this backend offers (REPLY_ACK, STATUS, ...).
  std::vector<std::string> names;
  for (const auto& s : a->channel().sent()) names.push_back(vu::request_name(s.request));
  const std::vector<std::string> expected{"GET_FEATURES",
                                          "GET_PROTOCOL_FEATURES",
                                          "SET_PROTOCOL_FEATURES",
                                          "SET_OWNER",
                                          "GET_FEATURES",
                                          "SET_VRING_CALL",
                                          "SET_VRING_ERR",
                                          "SET_VRING_CALL",
                                          "SET_VRING_ERR",
                                          "SET_VRING_ENABLE",
                                          "SET_VRING_ENABLE",
                                          "SET_VRING_ENABLE",
                                          "SET_VRING_ENABLE",
                                          "SET_FEATURES",
                                          "GET_STATUS",
                                          "SET_STATUS",
                                          "SET_MEM_TABLE",
                                          "SET_VRING_NUM",
                                          "SET_VRING_BASE",
                                          "SET_VRING_ADDR",
                                          "SET_VRING_KICK",
                                          "SET_VRING_CALL",
                                          "SET_VRING_NUM",
                                          "SET_VRING_BASE",
                                          "SET_VRING_ADDR",
                                          "SET_VRING_KICK",
                                          "SET_VRING_CALL",
                                          "GET_STATUS",
                                          "SET_STATUS"};
  EXPECT_EQ(names, expected);
  for (const auto& s : a->channel().sent()) {
    if (s.request == vu::to_u32(Request::kSetMemTable)) {
      EXPECT_NE(s.flags & vu::kFlagNeedReply, 0u) << "SET_MEM_TABLE without need_reply";
    }
  }
  EXPECT_EQ(a->channel().get_status(), std::optional<std::uint8_t>(*a->last_status_set()));

  post_rx(*a);
  post_rx(*b);
  EXPECT_TRUE(exchange(*a, fe::make_mac(1), *b, fe::make_mac(2), 20, 1));
}

TEST_F(Negotiation, ReplyAckForSetMemTable) {
  start_daemon({port("vm1", 1), port("vm2", 2)});
  auto a = connect_guest("vm1");
  auto b = connect_guest("vm2");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->channel().reply_ack());
  // QEMU waits for this ack; a good table is acked with 0...
  std::vector<vu::MemoryRegion> regions;
  for (const auto& r : a->memory().regions())
    regions.push_back({r.guest_phys_addr, r.size, r.user_addr, r.mmap_offset});
  std::vector<int> fds(regions.size(), a->memory().fd());
  EXPECT_TRUE(a->channel().set_mem_table(regions, fds)) << a->channel().last_error();
  // ...and one that cannot be mapped (an empty region) is NACKed.
  vu::MemoryRegion empty{0, 0, 0x7f0000000000, 0};
  std::vector<std::uint8_t> payload(8 + 32);
  const vu::MemoryTableHead head{1, 0};
  std::memcpy(payload.data(), &head, 8);
  std::memcpy(payload.data() + 8, &empty, 32);
  const int fd = a->memory().fd();
  auto ack = a->channel().send_raw_await_ack(vu::to_u32(Request::kSetMemTable), payload, {&fd, 1});
  ASSERT_TRUE(ack.has_value()) << a->channel().last_error();
  EXPECT_NE(*ack, 0u);
  // The refused table changed nothing: the rings still work on the old one,
  // and the port says it was refused.
  post_rx(*a);
  post_rx(*b);
  EXPECT_TRUE(exchange(*a, fe::make_mac(1), *b, fe::make_mac(2), 20, 1));
  EXPECT_EQ(port_state("vm1"), "running");
  EXPECT_TRUE(port_get("vm1").contains("memory_refused"));
}

// REPLY_ACK is as negotiated when the message was sent: RESET_OWNER forgets
// the protocol features, but the frontend that asked for its ack gets it.
TEST_F(Negotiation, ResetOwnerWithNeedReplyIsAcked) {
  start_daemon({port("vm1", 1)});
  auto a = connect_guest("vm1");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->channel().reply_ack());
  const auto ack = a->channel().send_raw_await_ack(vu::to_u32(Request::kResetOwner), {}, {});
  ASSERT_TRUE(ack.has_value()) << a->channel().last_error();
  EXPECT_EQ(*ack, 0u);
}

TEST_F(Negotiation, WithoutProtocolFeaturesRingsRunWithoutEnable) {
  start_daemon({port("vm1", 1), port("vm2", 2)});
  fe::NegotiateOptions o;
  o.accept_features &= ~virtio::bit(Feature::kVhostUserProtocolFeatures);
  auto a = connect_guest("vm1", o);
  auto b = connect_guest("vm2");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->acked_protocol_features(), 0u);
  for (const auto& s : a->channel().sent()) {
    EXPECT_NE(s.request, vu::to_u32(Request::kSetVringEnable));
  }
  EXPECT_FALSE(virtio::has(a->acked_features(), Feature::kVhostUserProtocolFeatures));
  EXPECT_EQ(port_get("vm1").at("features"), hex(a->acked_features()));
  post_rx(*a);
  post_rx(*b);
  EXPECT_TRUE(exchange(*a, fe::make_mac(1), *b, fe::make_mac(2), 20, 1));
}

TEST_F(Negotiation, MultiqueueOnlyWithSeveralQueuePairs) {
  start_daemon({port("one", 1), port("two", 2, {{"queues", 2}})});
  auto one = open_guest("one");
  auto two = open_guest("two");
  ASSERT_TRUE(one && two);
  auto f1 = one->channel().get_features();
  auto f2 = two->channel().get_features();
  ASSERT_TRUE(f1 && f2);
  EXPECT_FALSE(virtio::has(*f1, Feature::kNetMq));
  EXPECT_TRUE(virtio::has(*f2, Feature::kNetMq));
  auto p1 = one->channel().get_protocol_features();
  auto p2 = two->channel().get_protocol_features();
  ASSERT_TRUE(p1 && p2);
  EXPECT_FALSE(vu::has(*p1, ProtocolFeature::kMq));
  EXPECT_TRUE(vu::has(*p2, ProtocolFeature::kMq));
  ASSERT_TRUE(two->channel().set_protocol_features(*p2));
  EXPECT_EQ(two->channel().get_queue_num(), std::optional<std::uint64_t>(2));
}

// proto/config.schema.json: a port's "mtu" is the "MTU offered to the guest
// (VIRTIO_NET_F_MTU)". QEMU keeps VIRTIO_NET_F_MTU for the guest only if the
// vhost-user backend offers it, and sends NET_SET_MTU only when it was
// negotiated.
// BUG (open): Device::offered_features (lib/vhost/device.cpp) never offers
// VIRTIO_NET_F_MTU, so a guest of a "mtu": 9000 port is never told its MTU
// and NET_SET_MTU is never sent by QEMU. This test fails until it is offered.
TEST_F(Negotiation, PortMtuIsOfferedToTheGuest) {
  start_daemon({port("jumbo", 1, {{"mtu", 9000}})});
  fe::NegotiateOptions o;
  o.mtu = 9000;
  auto g = connect_guest("jumbo", o);
  ASSERT_TRUE(g);
  EXPECT_TRUE(vu::has(g->acked_protocol_features(), ProtocolFeature::kNetMtu));
  EXPECT_TRUE(virtio::has(g->offered_features(), Feature::kNetMtu))
      << "BUG: VIRTIO_NET_F_MTU not offered for a port with \"mtu\": 9000";
  bool mtu_sent = false;
  for (const auto& s : g->channel().sent())
    mtu_sent = mtu_sent || s.request == vu::to_u32(Request::kNetSetMtu);
  EXPECT_TRUE(mtu_sent) << "NET_SET_MTU was never sent (it needs VIRTIO_NET_F_MTU)";
}

}  // namespace
}  // namespace xdpvhost::integration

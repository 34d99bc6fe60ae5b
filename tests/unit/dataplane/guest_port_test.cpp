// The guest port datapath on one thread: guest TX -> switch -> guest RX,
// driven through in-process rings.

#include "dataplane/guest_port.hpp"

#include <gtest/gtest.h>

#include "dataplane/forwarder.hpp"
#include "sys/resource_ledger.hpp"
#include "virtio/dirty_log.hpp"
#include "net_test_guest.hpp"

namespace xdpvhost::dataplane {
namespace {

using test::NetTestGuest;
using virtio::bit;
using virtio::Feature;

const std::uint8_t kMacA[6] = {0x52, 0x54, 0, 0, 0, 0xa};
const std::uint8_t kMacB[6] = {0x52, 0x54, 0, 0, 0, 0xb};
const std::uint8_t kMacC[6] = {0x52, 0x54, 0, 0, 0, 0xc};
const std::uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
const std::uint8_t kUnknown[6] = {0x52, 0x54, 0, 0, 0, 0x99};

struct Node {
  Node(std::uint32_t id, const std::uint8_t mac[6], std::uint64_t features, PortTunables t = {},
       std::uint32_t ring = 256)
      : mac(net::MacAddress::from(mac)),
        guest(features, ring),
        port(id, std::string("p").append(std::to_string(id)), Port::kNoUplinkId,
             GuestPort::Options{1500, t, MacPolicy::kFixed, net::MacAddress::from(mac)}) {
    port.start_queue(guest.start(0));
    port.start_queue(guest.start(1));
  }
  std::uint64_t drops(DropReason r) const {
    return port.counters().drops[static_cast<std::size_t>(r)].get();
  }
  std::uint64_t refused(net::OffloadError e) const {
    return port.counters().offload_refused[static_cast<std::size_t>(e)].get();
  }
  net::MacAddress mac;
  NetTestGuest guest;
  GuestPort port;
};

struct GuestPortTest : ::testing::Test {
  void build(std::uint64_t fa = test::default_features(),
             std::uint64_t fb = test::default_features(), PortTunables ta = {},
             std::uint32_t ring_b = 256) {
    a = std::make_unique<Node>(1, kMacA, fa, ta);
    b = std::make_unique<Node>(2, kMacB, fb, PortTunables{}, ring_b);
    auto table = std::make_shared<SwitchTable>();
    table->add(SwitchEntry{&a->port, 1, 0, PortKind::kGuest, Port::kNoUplinkId, a->mac});
    table->add(SwitchEntry{&b->port, 2, 0, PortKind::kGuest, Port::kNoUplinkId, b->mac});
    if (c) table->add(SwitchEntry{&c->port, 3, 0, PortKind::kGuest, Port::kNoUplinkId, c->mac});
    forwarder.set_table(table);
  }
  unsigned round() {
    unsigned n = a->port.poll(forwarder) + b->port.poll(forwarder);
    if (c) n += c->port.poll(forwarder);
    a->port.end_burst();
    b->port.end_burst();
    if (c) c->port.end_burst();
    return n;
  }
  Forwarder forwarder{0};
  std::unique_ptr<Node> a, b, c;
};

TEST_F(GuestPortTest, UnicastReachesTheOwnerOfTheMac) {
  build();
  b->guest.post_rx(4);
  auto frame = test::udp_frame(kMacB, kMacA, 100);
  a->guest.send(frame);
  EXPECT_EQ(round(), 1u);
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, frame);
  EXPECT_EQ(got[0].header.num_buffers, 1);
  EXPECT_EQ(a->guest.tx_completed(), 1);
  EXPECT_EQ(a->port.counters().rx_packets.get(), 1u);
  EXPECT_EQ(a->port.counters().rx_bytes.get(), frame.size());
  EXPECT_EQ(b->port.counters().tx_packets.get(), 1u);
  EXPECT_TRUE(a->guest.received().empty()) << "nothing comes back to the sender";
}

TEST_F(GuestPortTest, HeaderAndFrameSplitOverDescriptors) {
  build();
  b->guest.post_rx(1);
  auto frame = test::udp_frame(kMacB, kMacA, 300);
  a->guest.send(frame, {}, /*pieces=*/4);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, frame);
}

TEST_F(GuestPortTest, BroadcastIsFloodedToEveryOtherPort) {
  c = std::make_unique<Node>(3, kMacC, test::default_features());
  build();
  b->guest.post_rx(2);
  c->guest.post_rx(2);
  a->guest.post_rx(2);
  auto frame = test::udp_frame(kBroadcast, kMacA, 60);
  a->guest.send(frame);
  round();
  EXPECT_EQ(b->guest.received().size(), 1u);
  EXPECT_EQ(c->guest.received().size(), 1u);
  EXPECT_TRUE(a->guest.received().empty());
}

TEST_F(GuestPortTest, UnknownUnicastWithoutUplinkIsDroppedAndCounted) {
  build();
  b->guest.post_rx(2);
  a->guest.send(test::udp_frame(kUnknown, kMacA, 60));
  round();
  EXPECT_EQ(a->drops(DropReason::kUnknownDestination), 1u);
  EXPECT_EQ(a->guest.tx_completed(), 1) << "the guest gets its buffer back";
  EXPECT_TRUE(b->guest.received().empty());
}

TEST_F(GuestPortTest, FrameToItsOwnMacIsAHairpinDrop) {
  build();
  a->guest.post_rx(2);
  a->guest.send(test::udp_frame(kMacA, kMacA, 60));
  round();
  EXPECT_EQ(a->drops(DropReason::kHairpin), 1u);
}

TEST_F(GuestPortTest, FramesWaitInOrderForAGuestWithoutReceiveBuffers) {
  build();
  std::vector<std::vector<std::uint8_t>> sent;
  for (std::size_t i = 0; i < 5; ++i) {
    sent.push_back(test::udp_frame(kMacB, kMacA, 60 + i));
    a->guest.send(sent.back());
  }
  round();
  EXPECT_EQ(a->guest.tx_completed(), 5) << "the sender is not held back";
  EXPECT_EQ(b->port.held(), 5u);
  EXPECT_EQ(b->drops(DropReason::kNoRxBuffer), 0u);
  b->guest.post_rx(2);
  round();
  auto first = b->guest.received();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].bytes, sent[0]);
  EXPECT_EQ(first[1].bytes, sent[1]);
  // A new frame queues behind the held ones.
  sent.push_back(test::udp_frame(kMacB, kMacA, 99));
  a->guest.send(sent.back());
  b->guest.post_rx(10);
  round();
  auto rest = b->guest.received();
  ASSERT_EQ(rest.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(rest[i].bytes, sent[i + 2]) << i;
  EXPECT_EQ(b->port.held(), 0u);
  EXPECT_EQ(b->port.counters().tx_packets.get(), 6u);
}

TEST_F(GuestPortTest, NoReceiveBufferIsCountedOnceTheBacklogIsFull) {
  build();
  const unsigned n = GuestPort::kBacklogFrames + 10;
  for (unsigned i = 0; i < n; ++i) {
    a->guest.send(test::udp_frame(kMacB, kMacA, 60));
    if (i % 50 == 49) round();  // at most tx_burst (64) per round; the ring holds 256
  }
  round();
  EXPECT_EQ(b->port.held(), GuestPort::kBacklogFrames);
  EXPECT_EQ(b->drops(DropReason::kNoRxBuffer), 10u);
  EXPECT_EQ(a->guest.tx_completed(), n);
}

TEST_F(GuestPortTest, HeldFramesAreCountedWhenTheGuestStopsItsReceiveQueue) {
  build();
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  ASSERT_EQ(b->port.held(), 2u);
  b->port.stop_queue(0);
  EXPECT_EQ(b->port.held(), 0u);
  EXPECT_EQ(b->drops(DropReason::kPortNotReady), 2u);
}

// A frontend that sends a new call or kick fd restarts the ring (virtio_user
// does, QEMU on a vhost-user reconnect of its chardev): the guest's ring goes
// on, so frames held for it wait through the restart, and so do frames that
// arrive while it is stopped.
TEST_F(GuestPortTest, HeldFramesWaitThroughARingRestart) {
  build();
  std::vector<std::vector<std::uint8_t>> sent;
  for (std::size_t i = 0; i < 3; ++i) {
    sent.push_back(test::udp_frame(kMacB, kMacA, 60 + i));
    a->guest.send(sent.back());
  }
  round();
  ASSERT_EQ(b->port.held(), 3u);
  auto restart = b->guest.start(0);
  restart.ring.last_avail_idx = b->port.stop_queue(0, vhost::RingStop::kRestart);
  sent.push_back(test::udp_frame(kMacB, kMacA, 99));
  a->guest.send(sent.back());
  round();  // b has no receive ring now
  EXPECT_EQ(b->port.held(), 4u);
  b->port.start_queue(std::move(restart));
  b->guest.post_rx(8);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i].bytes, sent[i]) << i;
  EXPECT_EQ(b->port.held(), 0u);
  EXPECT_EQ(b->drops(DropReason::kPortNotReady), 0u);
}

TEST_F(GuestPortTest, MergeableFrameSpreadsOverSeveralSmallBuffers) {
  build();
  b->guest.post_rx(10, 256);
  auto frame = test::udp_frame(kMacB, kMacA, 1000);
  a->guest.send(frame);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].header.num_buffers, (12 + frame.size() + 255) / 256);
  EXPECT_EQ(got[0].bytes, frame);
}

TEST_F(GuestPortTest, WithoutMergeableATooSmallBufferIsNotUsed) {
  build(test::default_features(), bit(Feature::kVersion1));
  b->guest.post_rx(1, 128);
  a->guest.send(test::udp_frame(kMacB, kMacA, 500));
  round();
  EXPECT_EQ(b->drops(DropReason::kRxBufferTooSmall), 1u);
  EXPECT_EQ(b->guest.rx.used_idx(), 0) << "the buffer stays with the guest";
  a->guest.send(test::udp_frame(kMacB, kMacA, 20));
  round();
  ASSERT_EQ(b->guest.received().size(), 1u) << "and takes the next frame that fits";
}

TEST_F(GuestPortTest, ReceiveBuffersSpreadOverTooManyDescriptorsAreTooSmall) {
  build();
  // Within the budget: a chain of 100 empty descriptors and a buffer is used.
  b->guest.post_rx_spread(100, 2048);
  auto frame = test::udp_frame(kMacB, kMacA, 100);
  a->guest.send(frame);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, frame);
  // Beyond it: the room only comes after 200 + 200 descriptors, more than
  // one frame may walk (a guest could otherwise make every frame walk 64
  // chains of a whole ring each).
  b->guest.post_rx_spread(199, 1);
  b->guest.post_rx_spread(199, 2048);
  a->guest.send(frame);
  round();
  ASSERT_EQ(b->drops(DropReason::kRxBufferTooSmall), 1u);
  EXPECT_TRUE(b->guest.received().empty());
  EXPECT_EQ(b->port.counters().tx_packets.get(), 1u);
}

TEST_F(GuestPortTest, BuffersFoundTooSmallAreNotWalkedAgainUntilTheGuestPostsMore) {
  build(test::default_features(), bit(Feature::kVersion1));
  b->guest.post_rx(1, 128);
  a->guest.send(test::udp_frame(kMacB, kMacA, 500));
  round();
  EXPECT_EQ(b->drops(DropReason::kRxBufferTooSmall), 1u);
  // The driver enlarges the buffer it already made available, without
  // telling: the device does not look at it again for a frame as large...
  b->guest.replace_rx_buffer(0, 2048);
  a->guest.send(test::udp_frame(kMacB, kMacA, 500));
  round();
  EXPECT_EQ(b->drops(DropReason::kRxBufferTooSmall), 2u) << "the ring was walked again";
  EXPECT_TRUE(b->guest.received().empty());
  // ...until the avail index moves.
  b->guest.post_rx(1, 2048);
  auto frame = test::udp_frame(kMacB, kMacA, 500);
  a->guest.send(frame);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, frame);
  EXPECT_EQ(b->drops(DropReason::kRxBufferTooSmall), 2u);
}

TEST_F(GuestPortTest, PartialChecksumIsCompletedForAGuestWithoutGuestCsum) {
  build(test::default_features() | bit(Feature::kNetCsum), test::default_features());
  b->guest.post_rx(1);
  auto frame = test::udp_frame(kMacB, kMacA, 333, /*partial_checksum=*/true);
  virtio::NetHeader h{};
  h.flags = virtio::NetHeader::kFlagNeedsCsum;
  h.csum_start = 34;
  h.csum_offset = 6;
  a->guest.send(frame, h, 3);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].header.flags, 0);
  EXPECT_TRUE(test::udp_checksum_ok(got[0].bytes));
}

TEST_F(GuestPortTest, PartialChecksumIsPassedToAGuestThatTakesIt) {
  build(test::default_features() | bit(Feature::kNetCsum),
        test::default_features() | bit(Feature::kNetGuestCsum));
  b->guest.post_rx(1);
  auto frame = test::udp_frame(kMacB, kMacA, 64, true);
  virtio::NetHeader h{};
  h.flags = virtio::NetHeader::kFlagNeedsCsum;
  h.csum_start = 34;
  h.csum_offset = 6;
  a->guest.send(frame, h);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].header.flags, virtio::NetHeader::kFlagNeedsCsum);
  EXPECT_EQ(got[0].header.csum_start, 34);
  EXPECT_EQ(got[0].bytes, frame);
}

TEST_F(GuestPortTest, ChecksumOffsetsOutsideTheFrameAreRefusedAsBadOffload) {
  build();
  b->guest.post_rx(1);
  virtio::NetHeader h{};
  h.flags = virtio::NetHeader::kFlagNeedsCsum;
  h.csum_start = 100;
  h.csum_offset = 6;
  a->guest.send(test::udp_frame(kMacB, kMacA, 10, true), h);
  round();
  EXPECT_EQ(a->drops(DropReason::kBadOffload), 1u);
  EXPECT_EQ(a->refused(net::OffloadError::csum_bad_start), 1u);
  EXPECT_TRUE(b->guest.received().empty());
}

// ---- segmentation offload -----------------------------------------------------

constexpr std::uint64_t kTsoSender =
    test::default_features() | bit(Feature::kNetCsum) | bit(Feature::kNetHostTso4);
constexpr std::uint64_t kTsoReceiver =
    test::default_features() | bit(Feature::kNetGuestCsum) | bit(Feature::kNetGuestTso4);
constexpr std::size_t kGsoPayload = 20000;
constexpr std::uint16_t kMss = 1448;

virtio::NetHeader tso_header(std::uint16_t gso_size = kMss) {
  return test::tso4_header(gso_size);
}

TEST_F(GuestPortTest, ATsoFrameReachesAGuestThatTakesTsoAsOneFrameWithItsHeader) {
  build(kTsoSender, kTsoReceiver);
  b->guest.post_rx(16, 4096);
  const auto sent = test::tcp_frame(kMacB, kMacA, kGsoPayload);
  a->guest.send(sent, tso_header(), 3);
  round();
  const auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, sent) << "unchanged: not segmented, no checksum written";
  EXPECT_EQ(got[0].header.gso_type, virtio::NetHeader::kGsoTcpv4);
  EXPECT_EQ(got[0].header.gso_size, kMss);
  EXPECT_EQ(got[0].header.flags & virtio::NetHeader::kFlagNeedsCsum,
            virtio::NetHeader::kFlagNeedsCsum);
  EXPECT_EQ(got[0].header.csum_start, 34u);
  EXPECT_EQ(got[0].header.csum_offset, 16u);
  EXPECT_EQ(a->port.counters().gso_rx.get(), 1u);
  EXPECT_EQ(b->port.counters().gso_segments.get(), 0u);
}

class TsoSegmentation : public GuestPortTest,
                        public ::testing::WithParamInterface<std::tuple<int, bool>> {};

// Sent in 1 or 3 descriptors (header and frame split as Linux does with
// ANY_LAYOUT), to a guest with or without GUEST_CSUM.
TEST_P(TsoSegmentation, ATsoFrameIsSegmentedInSoftwareForAGuestWithoutTso) {
  const auto [pieces, guest_csum] = GetParam();
  build(kTsoSender, test::default_features() | (guest_csum ? bit(Feature::kNetGuestCsum) : 0));
  b->guest.post_rx(32, 2048);
  const auto sent = test::tcp_frame(kMacB, kMacA, kGsoPayload, 1000, 0x18);
  a->guest.send(sent, tso_header(), pieces);
  round();
  const auto got = b->guest.received();
  const std::size_t segments = (kGsoPayload + kMss - 1) / kMss;
  ASSERT_EQ(got.size(), segments);
  std::vector<std::uint8_t> payload;
  std::uint32_t seq = 1000;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto& f = got[i].bytes;
    EXPECT_EQ(got[i].header.gso_type, virtio::NetHeader::kGsoNone);
    EXPECT_LE(f.size(), 14u + 1500u);
    EXPECT_TRUE(test::tcp_checksums_ok(f)) << "segment " << i;
    EXPECT_EQ(test::tcp_seq(f), seq) << "segment " << i;
    const std::uint8_t tcp_flags = f[14 + 20 + 13];
    EXPECT_EQ(tcp_flags & 0x08, i + 1 == got.size() ? 0x08 : 0) << "PSH on the last only";
    seq += static_cast<std::uint32_t>(f.size() - 54);
    payload.insert(payload.end(), f.begin() + 54, f.end());
  }
  EXPECT_EQ(payload, std::vector<std::uint8_t>(sent.begin() + 54, sent.end()));
  EXPECT_EQ(b->port.counters().gso_segments.get(), segments);
}

INSTANTIATE_TEST_SUITE_P(PiecesAndGuestCsum, TsoSegmentation,
                         ::testing::Combine(::testing::Values(1, 3), ::testing::Bool()));

// The datapath allocates nothing once a port exists: not when it holds
// frames for a guest without receive buffers (the backlog is allocated with
// the port), not when it segments for a guest without TSO. The heap in use,
// as the allocator counts it, is the same after such rounds as before (the
// first round, which sizes the descriptor-chain scratch, is the warm-up).
TEST_F(GuestPortTest, HoldingAndSegmentingFramesAllocatesNothing) {
  build(kTsoSender, test::default_features());
  constexpr std::size_t kSegments = (kGsoPayload + kMss - 1) / kMss;
  b->guest.post_rx(kSegments, 2048);
  a->guest.send(test::tcp_frame(kMacB, kMacA, kGsoPayload, 1000, 0x18), tso_header(), 3);
  round();
  ASSERT_EQ(b->guest.received().size(), kSegments) << "the guest has no buffer left";
  for (int i = 0; i < 4; ++i)
    a->guest.send(test::tcp_frame(kMacB, kMacA, kGsoPayload, 1000, 0x18), tso_header(), 3);
  const std::uint64_t before = sys::heap_bytes().in_use;
  round();
  const std::uint64_t holding = sys::heap_bytes().in_use;
  EXPECT_EQ(holding, before) << "the guest has no buffers: the frames wait in the backlog";
  ASSERT_EQ(b->port.held(), 4u);
  b->guest.post_rx(64, 2048);
  const std::uint64_t posted = sys::heap_bytes().in_use;
  round();
  EXPECT_EQ(sys::heap_bytes().in_use, posted) << "the held frames were segmented into the guest";
  EXPECT_EQ(b->port.held(), 0u);
  EXPECT_EQ(b->guest.received().size(), 4 * kSegments);
}

// A TCP stream of TSO frames to a guest without TSO that posts few buffers
// at a time: what the backlog holds arrives as the guest reposts, whole and
// in order (a held frame is retried once the driver's avail index moves,
// even while fewer buffers than its segments were cached), and what it could
// not hold is dropped whole and counted; the sender is never held up.
TEST_F(GuestPortTest, ATsoFrameOfMoreSegmentsThanTheReceiversRingIsDroppedNotWaitedFor) {
  build(kTsoSender, test::default_features(), {}, /*ring_b=*/16);
  b->guest.post_rx(16);
  // 20000 bytes in segments of 1000: 20 segments for a ring of 16.
  a->guest.send(test::tcp_frame(kMacB, kMacA, kGsoPayload), tso_header(1000), 3);
  round();
  EXPECT_EQ(b->drops(DropReason::kRxBufferTooSmall), 1u);
  EXPECT_EQ(b->port.held(), 0u) << "nothing waits";
  // The next frame is not held up behind it.
  const auto next = test::udp_frame(kMacB, kMacA, 100);
  a->guest.send(next);
  round();
  const auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, next);
}

// The per-round budget (tx_burst, 64) counts packets: a TSO frame its
// segments. Frames of 14 segments: five in a round (14 * 4 = 56 < 64), not
// the 64 chains a round would take of them otherwise (896 packets).
TEST_F(GuestPortTest, ATsoFrameCountsAgainstItsSendersRoundBudgetBySegments) {
  build(kTsoSender, kTsoReceiver);
  b->guest.post_rx(128, 4096);
  for (int i = 0; i < 10; ++i)
    a->guest.send(test::tcp_frame(kMacB, kMacA, kGsoPayload), tso_header(), 3);
  EXPECT_EQ(round(), 5u * 14u);
  EXPECT_EQ(a->guest.tx_completed(), 5);
  EXPECT_EQ(b->guest.received().size(), 5u);
  round();
  EXPECT_EQ(a->guest.tx_completed(), 10);
}

TEST_F(GuestPortTest, ATsoFrameOfOneSegmentAboveTheReceiversMtuIsOversize) {
  // GUEST_CSUM: the frame needs no work here, it would be passed on as it is.
  build(kTsoSender, test::default_features() | bit(Feature::kNetGuestCsum));
  b->port.set_mtu(1000);  // NET_SET_MTU: below the sender's 1500
  b->guest.post_rx(4, 2048);
  // One segment of 1200 bytes: passed on as a plain frame of 1254.
  a->guest.send(test::tcp_frame(kMacB, kMacA, 1200), tso_header(1400), 3);
  round();
  EXPECT_TRUE(b->guest.received().empty());
  EXPECT_EQ(b->drops(DropReason::kOversize), 1u);
}

// A guest without TSO whose MTU its sender's segments exceed: the frame is
// dropped whole, once, before any segment is made (not a drop per segment,
// and no part of it delivered).
TEST_F(GuestPortTest, ATsoFrameWhoseSegmentsExceedTheReceiversMtuIsDroppedWhole) {
  build(kTsoSender, test::default_features());
  b->port.set_mtu(1000);  // NET_SET_MTU: below the sender's segments of 1454
  b->guest.post_rx(16, 2048);
  a->guest.send(test::tcp_frame(kMacB, kMacA, 4 * 1400), tso_header(1400), 3);
  round();
  EXPECT_TRUE(b->guest.received().empty());
  EXPECT_EQ(b->drops(DropReason::kOversize), 1u);
  EXPECT_EQ(b->port.counters().gso_segments.get(), 0u);
  // Segments that fit go through.
  a->guest.send(test::tcp_frame(kMacB, kMacA, 4 * 900), tso_header(900), 3);
  round();
  EXPECT_EQ(b->guest.received().size(), 4u);
  EXPECT_EQ(b->drops(DropReason::kOversize), 1u);
}

TEST_F(GuestPortTest, ABroadcastTsoFrameCountsAgainstTheFloodRateByItsSegments) {
  PortTunables slow;
  slow.flood_rate = 1;  // a bucket of 64, refilled one a second
  build(kTsoSender, test::default_features(), slow, /*ring_b=*/256);
  b->guest.post_rx(256);
  // 14 segments each: four fit in the bucket (56), the other six do not.
  for (int i = 0; i < 10; ++i)
    a->guest.send(test::tcp_frame(kBroadcast, kMacA, kGsoPayload), tso_header(), 3);
  while (round() != 0) {
  }
  EXPECT_EQ(b->guest.received().size(), 4u * 14u);
  EXPECT_EQ(a->drops(DropReason::kFloodLimited), 6u);
}

TEST_F(GuestPortTest, AStreamOfTsoFramesReachesAGuestWithoutTsoAsItPostsBuffers) {
  build(kTsoSender, test::default_features() | bit(Feature::kNetGuestCsum));
  constexpr unsigned kFrames = 50;
  constexpr unsigned kSegments = 10;
  constexpr std::size_t kPayload = kSegments * kMss;
  b->guest.post_rx(24, 2048);
  std::uint32_t seq = 1000;
  for (unsigned i = 0; i < kFrames; ++i) {
    a->guest.send(test::tcp_frame(kMacB, kMacA, kPayload, seq), tso_header(), 3);
    seq += kPayload;
  }
  std::vector<std::uint32_t> seqs;
  for (int r = 0; r < 400 && (seqs.empty() || b->port.held() != 0 || r < 3); ++r) {
    round();
    const auto frames = b->guest.received();
    for (const auto& f : frames) seqs.push_back(test::tcp_seq(f.bytes));
    b->guest.post_rx(static_cast<int>(frames.size()), 2048);
  }
  EXPECT_EQ(b->port.held(), 0u);
  EXPECT_EQ(a->guest.tx_completed(), kFrames) << "the sender is never held up";
  const std::uint64_t dropped = b->drops(DropReason::kNoRxBuffer);
  EXPECT_EQ(seqs.size() + kSegments * dropped, kFrames * kSegments)
      << seqs.size() << " segments received, " << dropped << " frames dropped";
  EXPECT_GT(seqs.size(), 2u * kSegments) << "held frames were delivered after the first two";
  for (std::size_t i = 1; i < seqs.size(); ++i) {
    EXPECT_GT(seqs[i], seqs[i - 1]) << "in order, segment " << i;
    if (i % kSegments != 0) {
      EXPECT_EQ(seqs[i] - seqs[i - 1], kMss) << "whole frames, segment " << i;
    }
  }
}

TEST_F(GuestPortTest, ATsoFrameFromAGuestThatDidNotNegotiateTsoIsRefused) {
  build();
  b->guest.post_rx(16, 4096);
  a->guest.send(test::tcp_frame(kMacB, kMacA, 3000), tso_header());
  round();
  EXPECT_EQ(a->drops(DropReason::kBadOffload), 1u);
  EXPECT_EQ(a->refused(net::OffloadError::gso_bad_type), 1u);
  EXPECT_TRUE(b->guest.received().empty());
}

TEST_F(GuestPortTest, BadSegmentationHeadersAreRefusedAndCountedByReason) {
  build(kTsoSender, kTsoReceiver);
  b->guest.post_rx(16, 4096);
  a->guest.send(test::tcp_frame(kMacB, kMacA, 3000), tso_header(0));  // gso_size 0
  auto h = tso_header();
  h.hdr_len = 60000;  // beyond the frame
  a->guest.send(test::tcp_frame(kMacB, kMacA, 3000), h);
  a->guest.send(test::udp_frame(kMacB, kMacA, 3000, true), tso_header());  // TSO on UDP
  round();
  EXPECT_EQ(a->drops(DropReason::kBadOffload), 3u);
  EXPECT_EQ(a->refused(net::OffloadError::gso_bad_size), 1u);
  EXPECT_EQ(a->refused(net::OffloadError::gso_bad_hdr_len), 1u);
  EXPECT_EQ(a->refused(net::OffloadError::gso_l4_mismatch), 1u);
  EXPECT_TRUE(b->guest.received().empty());
  // The port goes on: a plain frame passes.
  a->guest.send(test::udp_frame(kMacB, kMacA, 10));
  round();
  EXPECT_EQ(b->guest.received().size(), 1u);
}

TEST_F(GuestPortTest, FramesBeyondTheMtuAreOversize) {
  build();
  b->guest.post_rx(4, 4096);
  a->guest.send(test::udp_frame(kMacB, kMacA, 1500 - 28));  // exactly MTU 1500
  a->guest.send(test::udp_frame(kMacB, kMacA, 1500 - 28 + 5));
  round();
  EXPECT_EQ(b->guest.received().size(), 1u);
  EXPECT_EQ(a->drops(DropReason::kOversize), 1u);
}

// A chain of `n` descriptors of `len` bytes each over one buffer, on A's TX
// ring (descriptors 0 .. n-1), made available once.
void publish_long_chain(NetTestGuest& guest, std::uint16_t n, std::uint32_t len) {
  auto& ring = guest.tx;
  const auto buf = ring.alloc(len);
  for (std::uint16_t i = 0; i < n; ++i)
    ring.set_desc(i, buf, len, i + 1 < n ? virtio::Descriptor::kFlagNext : 0,
                  static_cast<std::uint16_t>(i + 1 < n ? i + 1 : 0));
  ring.publish(0);
}

TEST_F(GuestPortTest, AChainJustOverTheMtuOfAPortWithoutTsoIsOnlyDropped) {
  build();
  b->guest.post_rx(4, 4096);
  publish_long_chain(a->guest, 8, 512);  // 4 KiB: over the MTU, under any frame
  round();
  EXPECT_EQ(a->drops(DropReason::kOversize), 1u);
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kRunning);
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  EXPECT_EQ(b->guest.received().size(), 1u) << "the queue goes on";
}

TEST_F(GuestPortTest, AChainBeyondA64KibFrameBreaksItsQueue) {
  build(kTsoSender, kTsoReceiver);
  b->guest.post_rx(4, 4096);
  publish_long_chain(a->guest, 160, 512);  // 80 KiB: no frame is that long
  round();
  EXPECT_EQ(a->drops(DropReason::kOversize), 1u);
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kBroken);
  EXPECT_EQ(a->port.queue_error(1), virtio::QueueError::kBeyondAnyFrame);
  EXPECT_EQ(NetTestGuest::read_eventfd(a->guest.tx_err), 1u) << "the frontend is told";
  // B is not affected, and A still receives.
  b->guest.send(test::udp_frame(kMacA, kMacB, 60));
  a->guest.post_rx(1);
  round();
  EXPECT_EQ(a->guest.received().size(), 1u);
  EXPECT_FALSE(b->port.broken());
}

TEST_F(GuestPortTest, A64KibTsoFrameInManyBuffersIsStillAFrame) {
  build(kTsoSender, kTsoReceiver);
  b->guest.post_rx(16, 4096);
  const auto sent = test::tcp_frame(kMacB, kMacA, 60000);
  a->guest.send(sent, tso_header(), 40);  // header and frame over 40 descriptors
  round();
  const auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, sent);
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kRunning);
}

TEST_F(GuestPortTest, RuntFrameIsMalformed) {
  build();
  a->guest.send(std::vector<std::uint8_t>(10, 0));
  round();
  EXPECT_EQ(a->drops(DropReason::kMalformed), 1u);
}

TEST_F(GuestPortTest, InterruptsAreCoalescedPerSignalBatch) {
  PortTunables t;
  t.signal_batch = 4;
  t.tx_burst = 64;
  build(test::default_features(), test::default_features(), t);
  b->guest.post_rx(16);
  for (int i = 0; i < 10; ++i) a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  // TX used entries published at 4, 8 and the end of the burst: 3 interrupts.
  EXPECT_EQ(NetTestGuest::read_eventfd(a->guest.tx_call), 3u);
  EXPECT_EQ(a->port.counters().interrupts.get(), 3u);
  EXPECT_EQ(a->guest.tx_completed(), 10);
}

TEST_F(GuestPortTest, NoInterruptFlagSuppressesAndIsCounted) {
  build();
  a->guest.tx.set_avail_flags(virtio::kAvailFlagNoInterrupt);
  b->guest.post_rx(4);
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  EXPECT_EQ(NetTestGuest::read_eventfd(a->guest.tx_call), 0u);
  EXPECT_EQ(a->port.counters().interrupts_suppressed.get(), 1u);
  EXPECT_EQ(b->port.counters().interrupts.get(), 1u) << "the receiver still wants its interrupt";
}

TEST_F(GuestPortTest, EventIndexAsksForInterruptsOnlyPastUsedEvent) {
  const auto f = test::default_features() | bit(Feature::kRingEventIdx);
  build(f, f);
  b->guest.post_rx(16);
  b->guest.rx.set_used_event(5);  // interrupt me when used idx passes 5
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  EXPECT_EQ(NetTestGuest::read_eventfd(b->guest.rx_call), 1u) << "the first one always goes";
  for (int i = 0; i < 3; ++i) {
    a->guest.send(test::udp_frame(kMacB, kMacA, 60));
    round();
  }
  EXPECT_EQ(NetTestGuest::read_eventfd(b->guest.rx_call), 0u) << "used idx 4 <= 5";
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  EXPECT_EQ(NetTestGuest::read_eventfd(b->guest.rx_call), 1u) << "used idx 6 passed 5";
}

TEST_F(GuestPortTest, MalformedRingBreaksOnlyThatQueue) {
  build();
  b->guest.post_rx(4);
  // A descriptor loop on A's TX ring.
  auto& ring = a->guest.tx;
  const auto buf = ring.alloc(64);
  ring.set_desc(0, buf, 64, virtio::Descriptor::kFlagNext, 1);
  ring.set_desc(1, buf, 64, virtio::Descriptor::kFlagNext, 0);
  ring.publish(0);
  round();
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kBroken);
  EXPECT_EQ(a->port.queue_error(1), virtio::QueueError::kDescriptorLoop);
  EXPECT_EQ(a->port.counters().queue_errors.get(), 1u);
  EXPECT_TRUE(a->port.broken());
  EXPECT_EQ(NetTestGuest::read_eventfd(a->guest.tx_err), 1u) << "the frontend is told";
  round();
  EXPECT_EQ(a->port.counters().queue_errors.get(), 1u) << "counted and reported once";
  // A still receives; B still works.
  b->guest.send(test::udp_frame(kMacA, kMacB, 60));
  a->guest.post_rx(1);
  round();
  EXPECT_EQ(a->guest.received().size(), 1u);
  EXPECT_FALSE(b->port.broken());
  // The guest resets the device: the queue is set up anew and works.
  a->port.stop_queue(1);
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kStopped);
}

TEST_F(GuestPortTest, StopFlushesAndReturnsTheNextAvailIndex) {
  PortTunables t;
  t.signal_batch = 1000;
  build(test::default_features(), test::default_features(), t);
  b->guest.post_rx(4);
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  a->port.poll(forwarder);  // no end_burst: the used entries are only staged
  EXPECT_EQ(a->guest.tx_completed(), 0);
  EXPECT_EQ(a->port.stop_queue(1), 2);
  EXPECT_EQ(a->guest.tx_completed(), 2) << "published at stop";
}

TEST_F(GuestPortTest, ARingThatFailsToAttachReportsTheBaseItWasGiven) {
  build();
  a->port.stop_queue(1);
  auto s = a->guest.start(1);
  s.ring.last_avail_idx = 100;
  s.ring.used_uva += 1;  // misaligned: the ring cannot be attached
  a->port.start_queue(std::move(s));
  EXPECT_EQ(a->port.queue_state(1), GuestPort::QueueState::kBroken);
  EXPECT_EQ(a->port.stop_queue(1), 100) << "GET_VRING_BASE answers the base the frontend set";
}

TEST_F(GuestPortTest, FrameForAPortWithoutRunningQueuesIsNotReady) {
  build();
  b->port.stop_queue(0);
  a->guest.send(test::udp_frame(kMacB, kMacA, 60));
  round();
  EXPECT_EQ(b->drops(DropReason::kPortNotReady), 1u);
}

// ---- live migration: dirty logging and SEND_RARP ---------------------------

namespace migration {

constexpr std::uint64_t kPage = virtio::DirtyLog::kPageSize;
constexpr std::uint64_t kUsedLog = 0x2000000;  // where b's used ring is logged

struct LoggedRxTest : GuestPortTest {
  std::vector<std::uint8_t> bits = std::vector<std::uint8_t>(2048, 0);  // 64 MiB
  std::shared_ptr<const virtio::DirtyLog> log = virtio::DirtyLog::wrap(bits.data(), bits.size());
  // b's receive queue again, now logging (as the device hands it over with LOG_ALL).
  void log_b_rx(std::shared_ptr<const virtio::DirtyLog> l) {
    auto s = b->guest.start(0);
    s.ring.log = std::move(l);
    s.ring.log_used = true;
    s.ring.used_log_gpa = kUsedLog;
    b->port.start_queue(std::move(s));
  }
  std::vector<std::uint64_t> marked() const {
    std::vector<std::uint64_t> out;
    for (std::uint64_t p = 0; p < bits.size() * 8; ++p)
      if (log->is_marked(p)) out.push_back(p);
    return out;
  }
};

TEST_F(LoggedRxTest, AFrameWrittenWhileLoggingMarksItsBufferAndTheUsedRing) {
  build();
  log_b_rx(log);
  b->guest.post_rx(1, 2048);
  const std::uint64_t buffer = b->guest.rx.desc(0)->addr;
  std::fill(bits.begin(), bits.end(), 0);
  auto frame = test::udp_frame(kMacB, kMacA, 1000);
  a->guest.send(frame);
  EXPECT_EQ(round(), 1u);
  ASSERT_EQ(b->guest.received().size(), 1u);
  const std::uint64_t last = buffer + b->guest.header_size() + frame.size() - 1;
  std::vector<std::uint64_t> want;
  for (std::uint64_t p = buffer / kPage; p <= last / kPage; ++p) want.push_back(p);
  want.push_back(kUsedLog / kPage);
  EXPECT_EQ(marked(), want) << "the buffer's pages and the used ring's log page, nothing else";
  // a's rings do not log: its TX used entry marked nothing.
}

TEST_F(LoggedRxTest, ALogThatCannotHoldTheBufferBreaksTheQueueAndCountsTheFrame) {
  build();
  std::vector<std::uint8_t> small(8, 0);  // 256 KiB: the TestRing's memory is above it
  auto s = b->guest.start(0);
  s.ring.log = virtio::DirtyLog::wrap(small.data(), small.size());
  b->port.start_queue(std::move(s));
  b->guest.post_rx(1, 2048);
  a->guest.send(test::udp_frame(kMacB, kMacA, 100));
  round();
  EXPECT_EQ(b->port.queue_state(0), GuestPort::QueueState::kBroken);
  EXPECT_EQ(b->port.queue_error(0), virtio::QueueError::kLogOutOfRange);
  EXPECT_EQ(b->drops(DropReason::kQueueBroken), 1u);
  // The chain taken for the frame went back, not used: a migration resumes
  // the guest's ring with its buffer still available, not lost.
  EXPECT_EQ(b->port.stop_queue(0), 0);
}

TEST_F(GuestPortTest, AnnounceFloodsARarpFromTheMacToTheOtherGuests) {
  build();
  b->guest.post_rx(2);
  a->port.announce(a->mac);
  round();
  auto got = b->guest.received();
  ASSERT_EQ(got.size(), 1u);
  const auto& f = got[0].bytes;
  ASSERT_EQ(f.size(), 60u);
  EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, kBroadcast));
  EXPECT_TRUE(std::equal(f.begin() + 6, f.begin() + 12, kMacA));
  EXPECT_EQ(f[12], 0x80);
  EXPECT_EQ(f[13], 0x35);  // RARP
  EXPECT_EQ(f[21], 0x03);  // reverse request
  EXPECT_TRUE(std::equal(f.begin() + 22, f.begin() + 28, kMacA));
  EXPECT_TRUE(std::equal(f.begin() + 32, f.begin() + 38, kMacA));
  round();
  EXPECT_TRUE(b->guest.received().empty()) << "one RARP per request";
}

TEST_F(GuestPortTest, AnnouncesCountAgainstThePortsFloodRate) {
  PortTunables slow;
  slow.flood_rate = 1;  // a bucket of 64, refilled one a second
  build(test::default_features(), test::default_features(), slow);
  b->guest.post_rx(80);
  for (int i = 0; i < 64; ++i) a->guest.send(test::udp_frame(kBroadcast, kMacA, 60));
  while (round() != 0) {
  }
  EXPECT_EQ(b->guest.received().size(), 64u);
  // SEND_RARP, as often as a frontend asks: a broadcast like the guest's own.
  a->port.announce(a->mac);
  round();
  EXPECT_TRUE(b->guest.received().empty());
  EXPECT_EQ(a->drops(DropReason::kFloodLimited), 1u);
}

TEST_F(GuestPortTest, AnAnnounceFromAMacThePortMayNotUseIsDroppedAndCounted) {
  build();
  b->guest.post_rx(2);
  a->port.announce(b->mac);  // a's port security: fixed to kMacA
  round();
  EXPECT_TRUE(b->guest.received().empty());
  EXPECT_EQ(a->drops(DropReason::kSpoofedSource), 1u);
}

}  // namespace migration

}  // namespace
}  // namespace xdpvhost::dataplane

// Frames between guests through the daemon: unicast both ways, flooding,
// drops by reason, mergeable and non-mergeable receive, every ring feature
// on and off, chain layouts, two memory regions, two queue pairs, checksum
// offload.

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "frontend/frame_checksum.hpp"
#include "guest_traffic.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::integration {
namespace {

using virtio::Feature;
using virtio::NetHeader;

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacB = fe::make_mac(2);
const fe::MacAddress kMacC = fe::make_mac(3);

// A TSO header for an untagged TCP/IPv4 frame with 20-byte headers, as a
// Linux guest sends it (NEEDS_CSUM at the TCP checksum).
NetHeader tso4_header(std::uint16_t gso_size) {
  NetHeader h{};
  h.flags = NetHeader::kFlagNeedsCsum;
  h.gso_type = NetHeader::kGsoTcpv4;
  h.gso_size = gso_size;
  h.hdr_len = 54;
  h.csum_start = 34;
  h.csum_offset = 16;
  return h;
}

class Switching : public DaemonTest {};

TEST_F(Switching, UnicastBothDirectionsWithEveryFrameSize) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  std::vector<Bytes> ab, ba;
  for (std::uint32_t i = 0; i < 600; ++i) {
    const std::size_t payload = 18 + (i * 37) % 1455;  // frames of 60..1514 bytes
    ab.push_back(numbered_frame(kMacB, kMacA, i, payload));
    ba.push_back(numbered_frame(kMacA, kMacB, 5000 + i, payload));
  }
  ab.push_back(numbered_frame(kMacB, kMacA, 9999, 1472));  // exactly the MTU
  EXPECT_TRUE(stream(*a, *b, ab));
  EXPECT_TRUE(stream(*b, *a, ba));
  EXPECT_EQ(a->net().stats().rx_errors, 0u) << a->net().last_error();
  EXPECT_EQ(b->net().stats().rx_errors, 0u) << b->net().last_error();
}

TEST_F(Switching, BroadcastAndMulticastAreFloodedToEveryOtherPort) {
  start_daemon({port("a", 1), port("b", 2), port("c", 3)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  auto c = connect_receiving_guest("c");
  std::vector<Bytes> flood;
  fe::ArpSpec arp;
  arp.sender_mac = kMacA;
  arp.sender_ip = {10, 0, 0, 1};
  arp.target_ip = {10, 0, 0, 2};
  flood.push_back(fe::build_arp(arp));
  flood.push_back(numbered_frame(fe::kBroadcastMac, kMacA, 1));
  flood.push_back(numbered_frame(fe::MacAddress{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}, kMacA, 2));
  flood.push_back(numbered_frame(fe::MacAddress{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}, kMacA, 3));
  ASSERT_TRUE(send_frames(*a, flood));
  EXPECT_TRUE(same_frames(flood, receive(*b, flood.size())));
  EXPECT_TRUE(same_frames(flood, receive(*c, flood.size())));
  // The sender never gets its own flood back: after a unicast marker from b,
  // the marker is all a has.
  const std::vector<Bytes> marker{numbered_frame(kMacA, kMacB, 77)};
  ASSERT_TRUE(send_frames(*b, marker));
  EXPECT_TRUE(same_frames(marker, receive(*a, 1)));
  EXPECT_TRUE(poll_received(*a).empty());
  EXPECT_EQ(counter("b", "tx_packets"), flood.size());
  EXPECT_EQ(counter("c", "tx_packets"), flood.size());
  EXPECT_EQ(counter("a", "rx_packets"), flood.size());
}

TEST_F(Switching, UnknownUnicastIsDroppedAndCountedOnTheSender) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(a);
  std::vector<Bytes> lost;
  for (std::uint32_t i = 0; i < 10; ++i)
    lost.push_back(numbered_frame(fe::make_mac(0x99), kMacA, i));
  ASSERT_TRUE(send_frames(*a, lost));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return drops("a", "unknown_destination") == 10; }))
      << stats("a").dump();
  const std::vector<Bytes> marker{numbered_frame(kMacB, kMacA, 100)};
  ASSERT_TRUE(send_frames(*a, marker));
  EXPECT_TRUE(same_frames(marker, receive(*b, 1)));
  EXPECT_TRUE(poll_received(*b).empty());
  EXPECT_EQ(drops("b", "unknown_destination"), 0u);
  EXPECT_EQ(counter("b", "tx_packets"), 1u);
}

TEST_F(Switching, NoRxBufferIsCountedOnTheReceiver) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_guest("a");
  auto b = connect_guest("b");
  ASSERT_TRUE(a && b);
  // b has posted no receive buffer. The daemon may hold a bounded number of
  // frames for it; every other frame is dropped and counted no_rx_buffer on
  // b (the receiver), none on a.
  constexpr std::size_t kFrames = 1000;
  std::vector<Bytes> sent;
  for (std::uint32_t i = 0; i < kFrames; ++i) sent.push_back(numbered_frame(kMacB, kMacA, i));
  ASSERT_TRUE(send_frames(*a, sent));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return drops("b", "no_rx_buffer") > 0; })) << stats("b").dump();
  EXPECT_EQ(drops("a", "no_rx_buffer"), 0u);
  EXPECT_EQ(counter("a", "rx_packets"), kFrames);
  // Buffers now: whatever was held arrives, in order; held + dropped is all.
  post_rx(*b);
  std::vector<fe::ReceivedFrame> got;
  EXPECT_TRUE(wait_until([&] {
    auto more = poll_received(*b);
    got.insert(got.end(), more.begin(), more.end());
    return got.size() + drops("b", "no_rx_buffer") == kFrames;
  })) << got.size()
      << " received, " << stats("b").dump();
  std::size_t at = 0;
  for (const auto& f : got) {
    while (at < sent.size() && sent[at] != f.bytes) ++at;
    ASSERT_LT(at, sent.size()) << "a received frame is not one sent, or out of order";
    ++at;
  }
  EXPECT_EQ(counter("b", "tx_packets"), got.size());
  // And the next frames simply arrive.
  const std::vector<Bytes> next{numbered_frame(kMacB, kMacA, 5000),
                                numbered_frame(kMacB, kMacA, 5001)};
  ASSERT_TRUE(send_frames(*a, next));
  EXPECT_TRUE(same_frames(next, receive(*b, 2)));
  EXPECT_TRUE(poll_received(*b).empty());
}

TEST_F(Switching, MergeableReceiveOverSmallBuffers) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_guest("a");
  auto b = connect_guest("b");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(virtio::has(b->acked_features(), Feature::kNetMrgRxbuf));
  post_rx(*b, 256);
  // 12-byte header + frame over 256-byte buffers.
  struct Case {
    std::size_t payload;
    std::uint16_t buffers;
  };
  const std::vector<Case> cases{{1000, 5}, {202, 1}, {203, 2}, {1472, 6}, {18, 1}};
  std::vector<Bytes> sent;
  for (std::uint32_t i = 0; i < cases.size(); ++i)
    sent.push_back(numbered_frame(kMacB, kMacA, i, cases[i].payload));
  ASSERT_TRUE(send_frames(*a, sent));
  const auto got = receive(*b, sent.size());
  ASSERT_TRUE(same_frames(sent, got));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::size_t need = 12 + sent[i].size();
    EXPECT_EQ(got[i].buffers, (need + 255) / 256) << "frame " << i;
    EXPECT_EQ(got[i].header.num_buffers, cases[i].buffers) << "frame " << i;
  }
  EXPECT_EQ(b->net().stats().rx_errors, 0u) << b->net().last_error();
}

TEST_F(Switching, NonMergeableGuestGetsOneBufferPerFrameAndTooSmallIsCounted) {
  start_daemon({port("a", 1), port("b", 2)});
  fe::NegotiateOptions o;
  o.mrg_rxbuf = false;
  auto a = connect_guest("a");
  auto b = connect_guest("b", o);
  ASSERT_TRUE(a && b);
  ASSERT_FALSE(virtio::has(b->acked_features(), Feature::kNetMrgRxbuf));
  EXPECT_EQ(b->net().header_size(), 12u);  // VERSION_1 keeps num_buffers
  post_rx(*b, 128);
  // 600-byte frames do not fit a 128-byte buffer: dropped, the buffer is
  // left for the next frame.
  std::vector<Bytes> big;
  for (std::uint32_t i = 0; i < 5; ++i) big.push_back(numbered_frame(kMacB, kMacA, i, 600));
  ASSERT_TRUE(send_frames(*a, big));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return drops("b", "rx_buffer_too_small") == 5; }))
      << stats("b").dump();
  const std::vector<Bytes> small{numbered_frame(kMacB, kMacA, 10, 18),
                                 numbered_frame(kMacB, kMacA, 11, 60)};
  ASSERT_TRUE(send_frames(*a, small));
  const auto got = receive(*b, 2);
  ASSERT_TRUE(same_frames(small, got));
  for (const auto& f : got) EXPECT_EQ(f.buffers, 1);
  EXPECT_EQ(b->rx_queue().in_flight(), b->rx_queue().size());  // every buffer posted again
}

// ---- ring features and chain layouts ------------------------------------------

struct MatrixCase {
  const char* name;
  bool event_idx = true;
  bool indirect = true;
  bool mrg_rxbuf = true;
  bool two_regions = false;
  fe::TxOptions tx{};
  fe::RxOptions rx{};
  std::uint32_t rx_size = 2048;
  std::uint16_t queue_size = 256;
  std::uint32_t slot_size = 16384;
};

void PrintTo(const MatrixCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<MatrixCase> matrix_cases() {
  std::vector<MatrixCase> v;
  v.push_back({.name = "Defaults"});
  v.push_back({.name = "EventIdxOff", .event_idx = false});
  v.push_back({.name = "IndirectOff", .indirect = false});
  v.push_back({.name = "IndirectChains", .tx = {.indirect = true}, .rx = {.indirect = true}});
  v.push_back({.name = "HeaderSplitAnyLayout",
               .tx = {.layout = fe::ChainLayout::kHeaderSplit},
               .rx = {.layout = fe::ChainLayout::kHeaderSplit}});
  v.push_back({.name = "HeaderSeparate",
               .tx = {.layout = fe::ChainLayout::kHeaderSeparate},
               .rx = {.layout = fe::ChainLayout::kHeaderSeparate}});
  v.push_back({.name = "ScatteredIndirect",
               .tx = {.layout = fe::ChainLayout::kScattered, .indirect = true, .chunk = 100},
               .rx = {.layout = fe::ChainLayout::kScattered, .indirect = true, .chunk = 300}});
  v.push_back({.name = "Scattered",
               .tx = {.layout = fe::ChainLayout::kScattered, .chunk = 64},
               .rx = {.layout = fe::ChainLayout::kScattered, .chunk = 128}});
  v.push_back({.name = "MergeableOff", .mrg_rxbuf = false});
  v.push_back({.name = "MergeableSmallBuffers", .rx_size = 300});
  v.push_back({.name = "TwoRegions", .two_regions = true});
  v.push_back({.name = "TwoRegionsIndirectScattered",
               .two_regions = true,
               .tx = {.layout = fe::ChainLayout::kScattered, .indirect = true, .chunk = 200},
               .rx = {.layout = fe::ChainLayout::kScattered, .indirect = true, .chunk = 200},
               .rx_size = 700});
  v.push_back({.name = "EverythingOff", .event_idx = false, .indirect = false, .mrg_rxbuf = false});
  v.push_back({.name = "Ring1024", .queue_size = 1024, .slot_size = 4096});
  v.push_back({.name = "Ring1024EventIdxOffIndirect",
               .event_idx = false,
               .tx = {.indirect = true},
               .queue_size = 1024,
               .slot_size = 4096});
  v.push_back({.name = "Ring4", .queue_size = 4});
  v.push_back({.name = "Ring4MergeableSmallBuffers", .rx_size = 512, .queue_size = 4});
  return v;
}

class FeatureMatrix : public DaemonTest, public ::testing::WithParamInterface<MatrixCase> {};

TEST_P(FeatureMatrix, FramesBothWays) {
  const MatrixCase& c = GetParam();
  start_daemon({port("a", 1), port("b", 2)});
  fe::NegotiateOptions o;
  o.event_idx = c.event_idx;
  o.indirect = c.indirect;
  o.mrg_rxbuf = c.mrg_rxbuf;
  o.queue_size = c.queue_size;
  o.buffer_slot_size = c.slot_size;
  fe::ArenaOptions mem;
  mem.two_regions = c.two_regions;
  auto a = connect_guest("a", o, mem);
  auto b = connect_guest("b", o, mem);
  ASSERT_TRUE(a && b);
  for (auto* g : {a.get(), b.get()}) {
    EXPECT_EQ(virtio::has(g->acked_features(), Feature::kRingEventIdx), c.event_idx);
    EXPECT_EQ(virtio::has(g->acked_features(), Feature::kRingIndirectDesc), c.indirect);
    EXPECT_EQ(virtio::has(g->acked_features(), Feature::kNetMrgRxbuf), c.mrg_rxbuf);
    if (c.two_regions) {
      // The rings really are spread over both regions.
      ASSERT_EQ(g->memory().regions().size(), 2u);
      const std::uint64_t second = g->memory().regions()[1].guest_phys_addr;
      std::vector<std::uint64_t> rings{g->rx_queue().desc_gpa(),  g->rx_queue().avail_gpa(),
                                       g->rx_queue().used_gpa(),  g->tx_queue().desc_gpa(),
                                       g->tx_queue().avail_gpa(), g->tx_queue().used_gpa()};
      EXPECT_TRUE(std::any_of(rings.begin(), rings.end(), [&](auto x) { return x >= second; }));
      EXPECT_TRUE(std::any_of(rings.begin(), rings.end(), [&](auto x) { return x < second; }));
    }
  }
  // A scattered buffer takes several descriptors: send in rounds no larger
  // than the buffers the receiver has.
  const std::size_t round_size =
      std::min<std::size_t>({64, post_rx(*a, c.rx_size, c.rx), post_rx(*b, c.rx_size, c.rx)});
  ASSERT_GE(round_size, 2u);
  std::vector<Bytes> ab, ba;
  for (std::uint32_t i = 0; i < 300; ++i) {  // more than the ring: indexes wrap
    const std::size_t payload = 18 + (i * 53) % 1455;
    ab.push_back(numbered_frame(kMacB, kMacA, i, payload));
    ba.push_back(numbered_frame(kMacA, kMacB, 1000 + i, payload));
  }
  // stream() with the case's TX layout.
  for (auto [from, to, frames] :
       {std::tuple{a.get(), b.get(), &ab}, std::tuple{b.get(), a.get(), &ba}}) {
    // Mergeable frames over small buffers take several buffers each.
    const std::size_t per_round =
        c.rx_size < 1600 && c.mrg_rxbuf ? std::max<std::size_t>(1, round_size / 7) : round_size;
    for (std::size_t at = 0; at < frames->size(); at += per_round) {
      const std::vector<Bytes> round(
          frames->begin() + static_cast<std::ptrdiff_t>(at),
          frames->begin() + static_cast<std::ptrdiff_t>(std::min(frames->size(), at + per_round)));
      ASSERT_TRUE(send_frames(*from, round, 0, c.tx));
      ASSERT_TRUE(same_frames(round, receive(*to, round.size()))) << "round at " << at;
    }
  }
  EXPECT_EQ(a->net().stats().rx_errors, 0u) << a->net().last_error();
  EXPECT_EQ(b->net().stats().rx_errors, 0u) << b->net().last_error();
  EXPECT_EQ(a->rx_queue().device_errors() + a->tx_queue().device_errors(), 0u);
  EXPECT_EQ(b->rx_queue().device_errors() + b->tx_queue().device_errors(), 0u);
  EXPECT_EQ(port_state("a"), "running");
  EXPECT_EQ(port_state("b"), "running");
  // Nothing was dropped on the way.
  for (const char* name : {"a", "b"}) {
    const auto s = stats(name);
    for (const auto& [reason, n] : s.at("drops").items()) EXPECT_EQ(n, 0) << name << " " << reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Daemon, FeatureMatrix, ::testing::ValuesIn(matrix_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- two queue pairs ------------------------------------------------------------

TEST_F(Switching, TwoQueuePairsCarryFramesOnEveryQueue) {
  start_daemon({port("a", 1, {{"queues", 2}}), port("b", 2, {{"queues", 2}})});
  fe::NegotiateOptions o;
  o.queue_pairs = 2;
  auto a = connect_guest("a", o);
  auto b = connect_guest("b", o);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(virtio::has(a->acked_features(), Feature::kNetMq));
  const auto detail = port_get("a");
  ASSERT_EQ(detail.at("queues").size(), 4u) << detail.dump();
  for (const auto& q : detail.at("queues")) EXPECT_EQ(q.at("state"), "enabled") << q.dump();
  post_rx(*a);
  post_rx(*b);
  for (auto [from, fmac, to, tmac] :
       {std::tuple{a.get(), kMacA, b.get(), kMacB}, std::tuple{b.get(), kMacB, a.get(), kMacA}}) {
    std::vector<Bytes> sent;
    std::vector<std::uint64_t> rx_before;
    for (std::uint16_t p = 0; p < 2; ++p) rx_before.push_back(to->net(p).stats().rx_frames);
    for (std::uint16_t p = 0; p < 2; ++p) {
      std::vector<Bytes> on_pair;
      for (std::uint32_t i = 0; i < 60; ++i)  // 60 flows per pair
        on_pair.push_back(numbered_frame(tmac, fmac, p * 1000 + i * 7, 64 + i));
      ASSERT_TRUE(send_frames(*from, on_pair, p));
      sent.insert(sent.end(), on_pair.begin(), on_pair.end());
    }
    const auto got = receive(*to, sent.size());
    EXPECT_TRUE(same_frames_any_order(sent, got));
    // Flows are spread over both receive queues.
    for (std::uint16_t p = 0; p < 2; ++p)
      EXPECT_GT(to->net(p).stats().rx_frames, rx_before[p])
          << "receive queue pair " << p << " unused";
    for (std::uint16_t p = 0; p < 2; ++p) EXPECT_TRUE(tx_drained(*from, p));
  }
}

TEST_F(Switching, SinglePairGuestOnATwoQueuePairPort) {
  start_daemon({port("a", 1, {{"queues", 2}}), port("b", 2)});
  auto a = connect_guest("a");  // a guest (or QEMU) without MQ: one pair
  auto b = connect_guest("b");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(virtio::has(a->acked_features(), Feature::kNetMq));
  post_rx(*a);
  post_rx(*b);
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 200, 0));
  EXPECT_EQ(port_state("a"), "running");
}

// ---- checksum offload ------------------------------------------------------------

TEST_F(Switching, PartialChecksumsAreCompletedOnlyForGuestsWithoutGuestCsum) {
  start_daemon({port("a", 1), port("b", 2), port("c", 3)});
  fe::NegotiateOptions no_guest_csum;
  no_guest_csum.accept_features &= ~virtio::bit(Feature::kNetGuestCsum);
  auto a = connect_guest("a");
  auto b = connect_guest("b", no_guest_csum);
  auto c = connect_guest("c");
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(virtio::has(a->acked_features(), Feature::kNetCsum));
  ASSERT_FALSE(virtio::has(b->acked_features(), Feature::kNetGuestCsum));
  ASSERT_TRUE(virtio::has(c->acked_features(), Feature::kNetGuestCsum));
  // b's buffers are scattered in 41-byte pieces: the UDP checksum field
  // (frame bytes 40-41) straddles two descriptors. Indirect, so that a whole
  // ring of them fits.
  ASSERT_GE(
      post_rx(*b, 2048, {.layout = fe::ChainLayout::kScattered, .indirect = true, .chunk = 41}),
      12u);
  post_rx(*c);

  for (const fe::MacAddress& dst : {kMacB, kMacC}) {
    std::vector<Bytes> complete, partial;
    std::vector<NetHeader> headers;
    for (std::uint32_t i = 0; i < 6; ++i) {
      Bytes f;
      if (i % 2 == 0) {
        f = numbered_frame(dst, kMacA, i, 40 + 97 * i);
      } else {
        fe::TcpFrameSpec t;
        t.dst_mac = dst;
        t.src_mac = kMacA;
        t.seq = i;
        t.payload = fe::payload_pattern(30 + 211 * i, i);
        f = fe::build_tcp(t);
      }
      ASSERT_TRUE(fe::verify_checksums(f).ok());
      complete.push_back(f);
      auto h = fe::make_checksum_partial(f);
      ASSERT_TRUE(h.has_value());
      partial.push_back(f);
      headers.push_back(*h);
    }
    for (std::size_t i = 0; i < partial.size(); ++i) {
      // Scattered TX too, with a piece boundary inside the checksum field.
      ASSERT_TRUE(send_frames(*a, {partial[i]}, 0,
                              {.layout = fe::ChainLayout::kScattered, .chunk = 41}, headers[i]));
    }
    fe::Frontend& to = dst == kMacB ? *b : *c;
    const auto got = receive(to, partial.size());
    ASSERT_EQ(got.size(), partial.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (dst == kMacB) {
        EXPECT_EQ(got[i].header.flags & NetHeader::kFlagNeedsCsum, 0) << "frame " << i;
        const auto report = fe::verify_checksums(got[i].bytes);
        EXPECT_TRUE(report.ok()) << "frame " << i << ": " << report.problem;
        EXPECT_EQ(got[i].bytes, complete[i]) << "frame " << i;
      } else {
        EXPECT_EQ(got[i].header.flags & NetHeader::kFlagNeedsCsum, NetHeader::kFlagNeedsCsum)
            << "frame " << i;
        EXPECT_EQ(got[i].header.csum_start, headers[i].csum_start) << "frame " << i;
        EXPECT_EQ(got[i].header.csum_offset, headers[i].csum_offset) << "frame " << i;
        EXPECT_EQ(got[i].bytes, partial[i]) << "frame " << i;
        Bytes done = got[i].bytes;
        ASSERT_TRUE(fe::complete_partial_checksum(done, got[i].header.csum_start,
                                                  got[i].header.csum_offset));
        EXPECT_EQ(done, complete[i]) << "frame " << i;
      }
    }
  }
}

TEST_F(Switching, FloodedPartialChecksumIsCompletedPerReceiver) {
  start_daemon({port("a", 1), port("b", 2), port("c", 3)});
  fe::NegotiateOptions no_guest_csum;
  no_guest_csum.accept_features &= ~virtio::bit(Feature::kNetGuestCsum);
  auto a = connect_guest("a");
  auto b = connect_receiving_guest("b", no_guest_csum);
  auto c = connect_receiving_guest("c");
  ASSERT_TRUE(a);
  Bytes f = numbered_frame(fe::kBroadcastMac, kMacA, 1, 333);
  const Bytes complete = f;
  auto h = fe::make_checksum_partial(f);
  ASSERT_TRUE(h);
  ASSERT_TRUE(send_frames(*a, {f}, 0, {}, h));
  const auto at_b = receive(*b, 1);
  const auto at_c = receive(*c, 1);
  ASSERT_EQ(at_b.size(), 1u);
  ASSERT_EQ(at_c.size(), 1u);
  EXPECT_EQ(at_b[0].bytes, complete);
  EXPECT_EQ(at_b[0].header.flags & NetHeader::kFlagNeedsCsum, 0);
  EXPECT_EQ(at_c[0].bytes, f);
  EXPECT_EQ(at_c[0].header.flags & NetHeader::kFlagNeedsCsum, NetHeader::kFlagNeedsCsum);
  EXPECT_EQ(at_c[0].header.csum_start, h->csum_start);
  EXPECT_EQ(at_c[0].header.csum_offset, h->csum_offset);
}

TEST_F(Switching, BadOffloadHeadersAreDroppedAndCountedByReason) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(a);
  const auto refused = [&](const char* reason) {
    return stats("a").at("offload_refused").value(reason, std::uint64_t{0});
  };
  // TSO (negotiated) on a UDP frame.
  NetHeader gso = tso4_header(1448);
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacA, 1, 1000)}, 0, {}, gso));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return drops("a", "bad_offload") == 1; })) << stats("a").dump();
  EXPECT_EQ(refused("gso_l4_mismatch"), 1u) << stats("a").dump();
  // UFO: never offered.
  gso.gso_type = NetHeader::kGsoUdp;
  gso.csum_offset = 6;
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacA, 4, 1000)}, 0, {}, gso));
  EXPECT_TRUE(wait_until([&] { return drops("a", "bad_offload") == 2; })) << stats("a").dump();
  EXPECT_EQ(refused("gso_bad_type"), 1u) << stats("a").dump();
  // NEEDS_CSUM whose checksum field lies beyond the frame.
  NetHeader bad_csum{};
  bad_csum.flags = NetHeader::kFlagNeedsCsum;
  bad_csum.csum_start = 1000;
  bad_csum.csum_offset = 6;
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacA, 3, 100)}, 0, {}, bad_csum));
  EXPECT_TRUE(wait_until([&] { return drops("a", "bad_offload") == 3; })) << stats("a").dump();
  EXPECT_EQ(refused("csum_bad_start"), 1u) << stats("a").dump();
  EXPECT_EQ(drops("a", "malformed"), 0u);
  const std::vector<Bytes> marker{numbered_frame(kMacB, kMacA, 2)};
  ASSERT_TRUE(send_frames(*a, marker));
  EXPECT_TRUE(same_frames(marker, receive(*b, 1)));
}

// Amplification with tiny segments: one 322-byte TSO descriptor of gso_size
// 1 would be 268 one-byte packets for a guest without TSO (and on the
// wire). It is refused; the smallest gso_size Linux allows passes.
TEST_F(Switching, TsoFramesOfTinySegmentsAreRefusedNotMultiplied) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_guest("a");
  fe::NegotiateOptions no_tso;
  no_tso.accept_features &=
      ~(virtio::bit(Feature::kNetGuestTso4) | virtio::bit(Feature::kNetGuestTso6) |
        virtio::bit(Feature::kNetGuestUso4) | virtio::bit(Feature::kNetGuestUso6));
  auto b = connect_receiving_guest("b", no_tso);
  ASSERT_TRUE(a && b);
  fe::TcpFrameSpec t;
  t.dst_mac = kMacB;
  t.src_mac = kMacA;
  t.payload = fe::payload_pattern(268, 7);
  const Bytes frame = fe::build_tcp(t);
  ASSERT_EQ(frame.size(), 322u);
  for (const std::uint16_t tiny : {1, 47})
    ASSERT_TRUE(send_frames(*a, {frame}, 0, {}, tso4_header(tiny)));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return drops("a", "bad_offload") == 2; })) << stats("a").dump();
  EXPECT_EQ(stats("a").at("offload_refused").value("gso_bad_size", std::uint64_t{0}), 2u);
  EXPECT_TRUE(receive(*b, 1, std::chrono::milliseconds(200)).empty());
  ASSERT_TRUE(send_frames(*a, {frame}, 0, {}, tso4_header(48)));
  EXPECT_EQ(receive(*b, 6).size(), 6u) << "268 bytes in segments of 48";
  EXPECT_EQ(stats("b").at("gso_segments").get<std::uint64_t>(), 6u) << stats("b").dump();
}

TEST_F(Switching, OversizeRuntAndHairpinFramesAreDroppedByReason) {
  start_daemon(
      {port("a", 1), port("b", 2), port("j1", 4, {{"mtu", 9000}}), port("j2", 5, {{"mtu", 9000}})});
  auto a = connect_guest("a");
  auto b = connect_receiving_guest("b");
  auto j1 = connect_guest("j1");
  auto j2 = connect_guest("j2");
  ASSERT_TRUE(a && j1 && j2);
  post_rx(*j2, 4096);
  // MTU 1500: 1518 bytes (a VLAN tag's worth over 1514) pass, 1519 do not.
  const Bytes fits = fe::add_vlan_tag(numbered_frame(kMacB, kMacA, 1, 1472), 7);
  ASSERT_EQ(fits.size(), 1518u);
  const Bytes too_big = numbered_frame(kMacB, kMacA, 2, 1477);
  ASSERT_EQ(too_big.size(), 1519u);
  ASSERT_TRUE(send_frames(*a, {too_big, fits}));
  EXPECT_TRUE(same_frames({fits}, receive(*b, 1)));
  EXPECT_TRUE(wait_until([&] { return drops("a", "oversize") == 1; })) << stats("a").dump();
  // Shorter than an Ethernet header.
  ASSERT_TRUE(send_frames(*a, {Bytes(10, 0xab)}));
  EXPECT_TRUE(wait_until([&] { return drops("a", "malformed") == 1; })) << stats("a").dump();
  // To its own MAC.
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacA, kMacA, 3)}));
  EXPECT_TRUE(wait_until([&] { return drops("a", "hairpin") == 1; })) << stats("a").dump();
  // Jumbo frames between two MTU 9000 ports; a 1500 port drops them on receipt.
  const Bytes jumbo = numbered_frame(fe::make_mac(5), fe::make_mac(4), 4, 8000);
  ASSERT_TRUE(send_frames(*j1, {jumbo}));
  const auto got = receive(*j2, 1);
  ASSERT_TRUE(same_frames({jumbo}, got));
  EXPECT_EQ(got[0].buffers, 2);  // 4096-byte buffers
  ASSERT_TRUE(send_frames(*j1, {numbered_frame(kMacB, fe::make_mac(4), 5, 8000)}));
  EXPECT_TRUE(wait_until([&] { return drops("b", "oversize") == 1; })) << stats("b").dump();
  EXPECT_TRUE(poll_received(*b).empty());
}

TEST_F(Switching, DisablingAQueuePairMovesTrafficToTheOthersAndBack) {
  start_daemon({port("a", 1, {{"queues", 2}}), port("b", 2, {{"queues", 2}})});
  fe::NegotiateOptions o;
  o.queue_pairs = 2;
  auto a = connect_receiving_guest("a", o);
  auto b = connect_receiving_guest("b", o);
  // The guest turns pair 1 off (as Linux does on "ethtool -L combined 1").
  ASSERT_TRUE(b->channel().set_vring_enable(2, false));
  ASSERT_TRUE(b->channel().set_vring_enable(3, false));
  EXPECT_EQ(queue_of("b", 2).at("state"), "disabled");
  std::vector<Bytes> sent;
  for (std::uint32_t i = 0; i < 100; ++i) sent.push_back(numbered_frame(kMacB, kMacA, i * 13, 80));
  ASSERT_TRUE(send_frames(*a, sent));
  const auto before1 = b->net(1).stats().rx_frames;
  EXPECT_TRUE(same_frames(sent, receive(*b, sent.size())));
  EXPECT_EQ(b->net(1).stats().rx_frames, before1) << "a disabled receive queue got frames";
  // Frames b queues on the disabled pair wait there...
  const std::vector<Bytes> waiting{numbered_frame(kMacA, kMacB, 1),
                                   numbered_frame(kMacA, kMacB, 2)};
  for (const auto& f : waiting) ASSERT_TRUE(b->net(1).send_frame(f));
  EXPECT_TRUE(poll_received(*a).empty());
  // ...until the pair is on again, from where it stopped.
  ASSERT_TRUE(b->channel().set_vring_enable(2, true));
  ASSERT_TRUE(b->channel().set_vring_enable(3, true));
  b->tx_queue(1).notify();
  EXPECT_TRUE(same_frames_any_order(waiting, receive(*a, waiting.size())));
  std::vector<Bytes> again;
  for (std::uint32_t i = 0; i < 100; ++i)
    again.push_back(numbered_frame(kMacB, kMacA, 7 + i * 13, 80));
  ASSERT_TRUE(send_frames(*a, again));
  EXPECT_TRUE(same_frames_any_order(again, receive(*b, again.size())));
  EXPECT_GT(b->net(1).stats().rx_frames, before1);
}

TEST_F(Switching, RingsWithoutKickOrCallFdArePolled) {
  start_daemon({port("a", 1), port("b", 2)}, {{"busy_poll_us", 0}});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  // a's transmit ring without a kick fd, b's receive ring without a call fd
  // (the "invalid fd" flag): the daemon polls a's ring, b polls its own.
  ASSERT_TRUE(a->channel().set_vring_kick(1, -1)) << a->channel().last_error();
  ASSERT_TRUE(b->channel().set_vring_call(0, -1)) << b->channel().last_error();
  EXPECT_EQ(port_state("a"), "running");
  const auto kicks = counter("a", "kicks");
  std::vector<Bytes> frames;
  for (std::uint32_t i = 0; i < 100; ++i) frames.push_back(numbered_frame(kMacB, kMacA, i));
  EXPECT_TRUE(stream(*a, *b, frames));
  EXPECT_EQ(counter("a", "kicks"), kicks);
  b->rx_queue().drain_interrupts();
  const auto interrupts = b->rx_queue().interrupts();
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 50, 1000));
  b->rx_queue().drain_interrupts();
  EXPECT_EQ(b->rx_queue().interrupts(), interrupts) << "interrupts on a call fd that was withdrawn";
}

}  // namespace
}  // namespace xdpvhost::integration

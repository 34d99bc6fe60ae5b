#include "net/gro_table.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "net/gso_segmenter.hpp"
#include "segment_sink.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::be16;
using testing::be32;
using testing::Bytes;
using testing::PacketSpec;

// What the guest would receive, in order: frames from the table's callback
// and frames the caller delivered itself (verdict deliver).
struct Delivered {
  Bytes bytes;
  std::uint32_t segments = 0;  // 0: delivered by the caller
  OffloadRequest offload;
  bool data_valid = false;
};

struct Receiver {
  explicit Receiver(GroConfig config = {}) : table(config) {}

  void operator()(const GroFrame& f) noexcept {
    Delivered d;
    d.bytes.assign(f.header, f.header + f.header_len);
    for (std::uint32_t i = 0; i < f.payload_count; ++i) {
      d.bytes.insert(d.bytes.end(), f.payload[i].data, f.payload[i].data + f.payload[i].len);
    }
    EXPECT_EQ(d.bytes.size(), f.len);
    if (f.segments > 1) {
      // The layout handed on is the one the merged bytes parse to.
      FrameLayout parsed;
      EXPECT_EQ(parse_headers(d.bytes.data(), f.len, f.len, parsed), ParseError::none);
      const FrameLayout& got = f.layout;
      EXPECT_EQ(got.frame_len, parsed.frame_len);
      EXPECT_EQ(got.vlan_tpid, parsed.vlan_tpid);
      EXPECT_EQ(got.ethertype, parsed.ethertype);
      EXPECT_EQ(got.l3_offset, parsed.l3_offset);
      EXPECT_EQ(got.l3, parsed.l3);
      EXPECT_EQ(got.ip_fragment, parsed.ip_fragment);
      EXPECT_EQ(got.ip_protocol, parsed.ip_protocol);
      EXPECT_EQ(got.l4_offset, parsed.l4_offset);
      EXPECT_EQ(got.l4, parsed.l4);
      EXPECT_EQ(got.l4_header_len, parsed.l4_header_len);
      EXPECT_EQ(got.packet_end, parsed.packet_end);
    }
    d.segments = f.segments;
    d.offload = f.offload;
    d.data_valid = f.data_valid;
    out.push_back(std::move(d));
  }

  // Offers every frame (they must outlive the flush), then flushes.
  std::vector<GroVerdict> burst(const std::vector<Bytes>& frames, bool verified = false) {
    std::vector<GroVerdict> verdicts;
    for (const Bytes& f : frames) {
      const GroResult r =
          table.offer(f.data(), static_cast<std::uint32_t>(f.size()), verified, *this);
      if (r.verdict == GroVerdict::deliver) out.push_back({f, 0, {}, r.data_valid});
      verdicts.push_back(r.verdict);
    }
    table.flush(*this);
    EXPECT_EQ(table.held_flows(), 0u);
    return verdicts;
  }

  GroTable table;
  std::vector<Delivered> out;
};

// Segments of one TCP flow, `n` of them with `mss` payload each, as a
// sender's TSO would make them.
std::vector<Bytes> flow(PacketSpec s, std::uint32_t n, std::uint32_t mss = 1448) {
  std::vector<Bytes> v;
  for (std::uint32_t i = 0; i < n; ++i) {
    PacketSpec p = s;
    p.seq = s.seq + i * mss;
    p.ip_id = static_cast<std::uint16_t>(s.ip_id + i);
    p.payload = testing::pattern(mss, i * mss);
    v.push_back(testing::build_frame(p));
  }
  return v;
}

// The GSO frame as a guest's TSO would hand it over, its segments, and the
// check that GRO gives the original back.
struct RoundTrip {
  Bytes original;
  std::vector<Bytes> segments;
};

RoundTrip gso_round_trip(PacketSpec s, std::uint32_t payload, std::uint16_t mss) {
  s.csum = testing::L4Checksum::partial;
  s.payload = testing::pattern(payload);
  RoundTrip rt{testing::build_frame(s), {}};
  const testing::RefLayout l = testing::ref_layout(rt.original);
  OffloadRequest r;
  r.gso.type = s.ipv6 ? GsoType::tcpv6 : GsoType::tcpv4;
  r.gso.gso_size = mss;
  r.gso.ecn = (s.flags & 0x80) != 0;
  r.csum = {true, static_cast<std::uint16_t>(l.l4), 16};
  const ByteSpan span{rt.original.data(), static_cast<std::uint32_t>(rt.original.size())};
  const OffloadCheck c = validate_offload(ByteSpans(span), r, {});
  EXPECT_TRUE(c.ok()) << counter_name(c.error);
  testing::VectorSink sink;
  EXPECT_EQ(segment(ByteSpans(span), c.offload, ChecksumMode::software, sink).status,
            SegmentStatus::done);
  rt.segments = sink.segments;
  return rt;
}

void expect_super_frame(const Delivered& d, const Bytes& original, std::uint32_t segments,
                        std::uint16_t mss) {
  const testing::RefLayout l = testing::ref_layout(original);
  EXPECT_EQ(d.segments, segments);
  EXPECT_EQ(d.bytes, original);
  EXPECT_EQ(d.offload.gso.type, l.ipv6 ? GsoType::tcpv6 : GsoType::tcpv4);
  EXPECT_EQ(d.offload.gso.gso_size, mss);
  EXPECT_EQ(d.offload.gso.hdr_len, l.l4 + (original[l.l4 + 12] >> 4) * 4u);
  EXPECT_TRUE(d.offload.csum.needed);
  EXPECT_EQ(d.offload.csum.start, l.l4);
  EXPECT_EQ(d.offload.csum.offset, 16);
  // What the guest does with NEEDS_CSUM gives a valid checksum.
  Bytes completed = d.bytes;
  testing::ref_complete(completed, d.offload.csum.start, d.offload.csum.offset);
  EXPECT_TRUE(testing::ref_l4_checksum_ok(completed));
  EXPECT_TRUE(testing::ref_ipv4_header_ok(d.bytes));
}

TEST(GroTable, RoundTripIpv4WithTimestamps) {
  PacketSpec s;
  s.flags = 0x18;  // ACK PSH: PSH lands on the last segment, and back
  s.tcp_options = testing::timestamp_option(1000, 2000);
  const RoundTrip rt = gso_round_trip(s, 20000, 1448);
  ASSERT_EQ(rt.segments.size(), 14u);
  Receiver rx;
  const auto verdicts = rx.burst(rt.segments);
  EXPECT_EQ(verdicts[0], GroVerdict::held);
  for (std::size_t i = 1; i < verdicts.size(); ++i) EXPECT_EQ(verdicts[i], GroVerdict::merged);
  ASSERT_EQ(rx.out.size(), 1u);
  expect_super_frame(rx.out[0], rt.original, 14, 1448);
  EXPECT_FALSE(rx.out[0].offload.gso.ecn);
}

TEST(GroTable, RoundTripIpv6WithVlanTag) {
  PacketSpec s;
  s.ipv6 = true;
  s.vlan_tpid = 0x8100;
  s.tcp_options = testing::timestamp_option(5, 6);
  const RoundTrip rt = gso_round_trip(s, 64000, 1428);
  Receiver rx;
  rx.burst(rt.segments);
  ASSERT_EQ(rx.out.size(), 1u);
  expect_super_frame(rx.out[0], rt.original, 45, 1428);
}

TEST(GroTable, RoundTripCwrWithGuestEcn) {
  PacketSpec s;
  s.flags = 0x90;  // CWR ACK
  s.tos = 0x02;
  const RoundTrip rt = gso_round_trip(s, 6000, 1448);
  GroConfig ecn;
  ecn.ecn = true;
  Receiver rx(ecn);
  rx.burst(rt.segments);
  ASSERT_EQ(rx.out.size(), 1u);
  expect_super_frame(rx.out[0], rt.original, 5, 1448);
  EXPECT_TRUE(rx.out[0].offload.gso.ecn);

  Receiver plain;  // without GUEST_ECN the CWR segment goes alone
  const auto v = plain.burst(rt.segments);
  EXPECT_EQ(v[0], GroVerdict::deliver);
  ASSERT_EQ(plain.out.size(), 2u);
  EXPECT_EQ(plain.out[0].bytes, rt.segments[0]);
  EXPECT_EQ(plain.out[1].segments, 4u);
  EXPECT_FALSE(plain.out[1].offload.gso.ecn);
}

TEST(GroTable, FinSegmentFollowsTheSuperFrame) {
  PacketSpec s;
  s.flags = 0x19;  // ACK PSH FIN: FIN and PSH on the last segment
  const RoundTrip rt = gso_round_trip(s, 5000, 1448);
  Receiver rx;
  const auto v = rx.burst(rt.segments);
  EXPECT_EQ(v.back(), GroVerdict::deliver);
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].segments, 3u);
  EXPECT_EQ(rx.out[1].segments, 0u);  // the caller's own delivery, after the flow
  EXPECT_EQ(rx.out[1].bytes, rt.segments.back());
  EXPECT_EQ(rx.out[0].bytes[34 + 13], 0x10);
}

TEST(GroTable, LoneSegmentIsDeliveredUnchangedAtTheFlush) {
  PacketSpec s;
  s.payload = testing::pattern(1000);
  s.padding = 0;
  const Bytes f = testing::build_frame(s);
  Receiver rx;
  EXPECT_EQ(rx.burst({f})[0], GroVerdict::held);
  ASSERT_EQ(rx.out.size(), 1u);
  EXPECT_EQ(rx.out[0].segments, 1u);
  EXPECT_EQ(rx.out[0].bytes, f);
  EXPECT_FALSE(rx.out[0].offload.any());
  EXPECT_TRUE(rx.out[0].data_valid);
}

TEST(GroTable, PshOnTheFirstSegmentIsDeliveredAtOnce) {
  PacketSpec s;
  s.flags = 0x18;
  s.payload = testing::pattern(100);
  const Bytes f = testing::build_frame(s);
  Receiver rx;
  const GroResult r = rx.table.offer(f.data(), static_cast<std::uint32_t>(f.size()), false, rx);
  EXPECT_EQ(r.verdict, GroVerdict::deliver);
  EXPECT_TRUE(r.data_valid);
  EXPECT_EQ(rx.table.held_flows(), 0u);
}

TEST(GroTable, GapAndRetransmissionStartNewSuperFrames) {
  PacketSpec s;
  std::vector<Bytes> f = flow(s, 6);
  std::vector<Bytes> gap = {f[0], f[1], f[3], f[4]};
  Receiver rx;
  EXPECT_EQ(rx.burst(gap), (std::vector<GroVerdict>{GroVerdict::held, GroVerdict::merged,
                                                    GroVerdict::held, GroVerdict::merged}));
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(be32(&rx.out[0].bytes[38]), 1000u);
  EXPECT_EQ(be32(&rx.out[1].bytes[38]), 1000u + 3 * 1448);

  std::vector<Bytes> retransmit = {f[0], f[1], f[1], f[2]};
  Receiver rx2;
  rx2.burst(retransmit);
  ASSERT_EQ(rx2.out.size(), 2u);
  EXPECT_EQ(rx2.out[0].segments, 2u);
  EXPECT_EQ(rx2.out[1].segments, 2u);
  EXPECT_EQ(be32(&rx2.out[1].bytes[38]), 1000u + 1448);
}

TEST(GroTable, FlagsThatDoNotCoalesce) {
  for (std::uint8_t flags : {0x11, 0x12, 0x14, 0x30, 0x50, 0x02}) {
    PacketSpec s;
    std::vector<Bytes> f = flow(s, 3);
    PacketSpec odd = s;
    odd.flags = flags;
    odd.seq = s.seq + 1448;
    odd.ip_id = static_cast<std::uint16_t>(s.ip_id + 1);
    odd.payload = testing::pattern(1448, 1448);
    f[1] = testing::build_frame(odd);
    Receiver rx;
    const auto v = rx.burst(f);
    SCOPED_TRACE(int{flags});
    EXPECT_EQ(v[1], GroVerdict::deliver);
    ASSERT_EQ(rx.out.size(), 3u);  // f0 flushed first, f1 by the caller, f2 at the flush
    EXPECT_EQ(rx.out[0].bytes, f[0]);
    EXPECT_EQ(rx.out[1].bytes, f[1]);
    EXPECT_EQ(rx.out[2].bytes, f[2]);
  }
}

TEST(GroTable, PureAckFlushesItsFlowFirst) {
  PacketSpec s;
  std::vector<Bytes> f = flow(s, 2);
  PacketSpec ack = s;
  ack.seq = s.seq + 2 * 1448;
  f.push_back(testing::build_frame(ack));  // no payload
  Receiver rx;
  const auto v = rx.burst(f);
  EXPECT_EQ(v[2], GroVerdict::deliver);
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].segments, 2u);
  EXPECT_EQ(rx.out[1].bytes, f[2]);
}

struct Variation {
  const char* what;
  void (*change)(PacketSpec&);
};

TEST(GroTable, HeaderDifferencesEndTheSuperFrame) {
  const Variation variations[] = {
      {"ttl", [](PacketSpec& p) { p.ttl = 63; }},
      {"tos ecn CE", [](PacketSpec& p) { p.tos = 0x03; }},
      {"tos dscp", [](PacketSpec& p) { p.tos = 0x20; }},
      {"ack", [](PacketSpec& p) { p.ack += 1; }},
      {"window", [](PacketSpec& p) { p.window = 600; }},
      {"sack option", [](PacketSpec& p) { p.tcp_options = {1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2}; }},
      {"ip id jump", [](PacketSpec& p) { p.ip_id = static_cast<std::uint16_t>(p.ip_id + 7); }},
  };
  for (const Variation& var : variations) {
    SCOPED_TRACE(var.what);
    PacketSpec s;
    s.tcp_options = {1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 3};
    std::vector<Bytes> f = flow(s, 3);
    PacketSpec changed = s;
    changed.seq = s.seq + 2 * 1448;
    changed.ip_id = static_cast<std::uint16_t>(s.ip_id + 2);
    changed.payload = testing::pattern(1448, 2 * 1448);
    var.change(changed);
    f[2] = testing::build_frame(changed);
    Receiver rx;
    const auto v = rx.burst(f);
    EXPECT_EQ(v[2], GroVerdict::held);
    ASSERT_EQ(rx.out.size(), 2u);
    EXPECT_EQ(rx.out[0].segments, 2u);
    EXPECT_EQ(rx.out[1].segments, 1u);
    EXPECT_EQ(rx.out[1].bytes, f[2]);
  }
}

TEST(GroTable, Ipv6HeaderDifferences) {
  const Variation variations[] = {
      {"hop limit", [](PacketSpec& p) { p.ttl = 1; }},
      {"traffic class", [](PacketSpec& p) { p.tos = 0x01; }},
      {"flow label", [](PacketSpec& p) { p.flow_label = 9; }},
  };
  for (const Variation& var : variations) {
    SCOPED_TRACE(var.what);
    PacketSpec s;
    s.ipv6 = true;
    std::vector<Bytes> f = flow(s, 2);
    PacketSpec changed = s;
    changed.seq = s.seq + 1448;
    changed.payload = testing::pattern(1448, 1448);
    var.change(changed);
    f[1] = testing::build_frame(changed);
    Receiver rx;
    rx.burst(f);
    EXPECT_EQ(rx.out.size(), 2u);
  }
}

TEST(GroTable, SegmentsThatAreNeverCoalesced) {
  const Variation variations[] = {
      {"fragment",
       [](PacketSpec& p) {
         p.df = false;
         p.frag = 0x2000;
       }},
      {"no DF", [](PacketSpec& p) { p.df = false; }},
      {"ipv4 options",
       [](PacketSpec& p) {
         p.ipv4_options = {1, 1, 1, 0};
       }},
      {"udp", [](PacketSpec& p) { p.udp = true; }},
      {"ipv6 ext header",
       [](PacketSpec& p) {
         p.ipv6 = true;
         p.ipv6_first_next = 60;
         p.ipv6_ext = {6, 0, 1, 4, 0, 0, 0, 0};
       }},
  };
  for (const Variation& var : variations) {
    SCOPED_TRACE(var.what);
    PacketSpec s;
    var.change(s);
    const std::vector<Bytes> f = flow(s, 3);
    Receiver rx;
    const auto v = rx.burst(f);
    for (GroVerdict x : v) EXPECT_EQ(x, GroVerdict::deliver);
    EXPECT_EQ(rx.out.size(), 3u);
  }
}

TEST(GroTable, TimestampsMayAdvanceButNotGoBack) {
  PacketSpec s;
  std::vector<Bytes> f;
  const std::uint32_t tsvals[] = {100, 100, 101, 103, 102};
  for (std::uint32_t i = 0; i < 5; ++i) {
    PacketSpec p = s;
    p.tcp_options = testing::timestamp_option(tsvals[i], 50 + i / 2);
    p.seq = s.seq + i * 1448;
    p.ip_id = static_cast<std::uint16_t>(s.ip_id + i);
    p.payload = testing::pattern(1448, i * 1448);
    f.push_back(testing::build_frame(p));
  }
  Receiver rx;
  rx.burst(f);
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].segments, 4u);
  // The super-frame carries the last merged segment's timestamps.
  EXPECT_EQ(be32(&rx.out[0].bytes[54 + 4]), 103u);
  EXPECT_EQ(be32(&rx.out[0].bytes[54 + 8]), 51u);
  EXPECT_EQ(rx.out[1].bytes, f[4]);
}

TEST(GroTable, FixedIpv4IdsCoalesce) {
  PacketSpec s;
  std::vector<Bytes> f;
  for (std::uint32_t i = 0; i < 4; ++i) {
    PacketSpec p = s;
    p.seq = s.seq + i * 1000;
    p.payload = testing::pattern(1000, i * 1000);
    f.push_back(testing::build_frame(p));  // same id every time
  }
  Receiver rx;
  rx.burst(f);
  ASSERT_EQ(rx.out.size(), 1u);
  EXPECT_EQ(rx.out[0].segments, 4u);
}

TEST(GroTable, ShorterSegmentEndsTheSuperFrame) {
  PacketSpec s;
  std::vector<Bytes> f = flow(s, 2);
  PacketSpec shorter = s;
  shorter.seq = s.seq + 2 * 1448;
  shorter.ip_id = static_cast<std::uint16_t>(s.ip_id + 2);
  shorter.payload = testing::pattern(500, 2 * 1448);
  f.push_back(testing::build_frame(shorter));
  PacketSpec next = s;
  next.seq = shorter.seq + 500;
  next.ip_id = static_cast<std::uint16_t>(s.ip_id + 3);
  next.payload = testing::pattern(1448, 2 * 1448 + 500);
  f.push_back(testing::build_frame(next));
  // A segment longer than the first (the MSS) does not join either.
  PacketSpec longer = s;
  longer.seq = next.seq + 1448;
  longer.ip_id = static_cast<std::uint16_t>(s.ip_id + 4);
  longer.payload = testing::pattern(1460, 3 * 1448 + 500);
  f.push_back(testing::build_frame(longer));
  Receiver rx;
  EXPECT_EQ(rx.burst(f),
            (std::vector<GroVerdict>{GroVerdict::held, GroVerdict::merged, GroVerdict::merged,
                                     GroVerdict::held, GroVerdict::held}));
  ASSERT_EQ(rx.out.size(), 3u);
  EXPECT_EQ(rx.out[0].segments, 3u);
  EXPECT_EQ(rx.out[0].offload.gso.gso_size, 1448);
  EXPECT_EQ(rx.out[1].segments, 1u);
  EXPECT_EQ(rx.out[2].segments, 1u);
}

TEST(GroTable, BadChecksumIsDeliveredAloneUnlessTheDeviceVerified) {
  PacketSpec s;
  std::vector<Bytes> f = flow(s, 3);
  f[1][60] ^= 0x01;  // a payload bit: the TCP checksum no longer matches
  Receiver rx;
  const auto v = rx.burst(f);
  EXPECT_EQ(v[1], GroVerdict::deliver);
  ASSERT_EQ(rx.out.size(), 3u);
  EXPECT_FALSE(rx.out[1].data_valid);
  EXPECT_TRUE(rx.out[0].data_valid);

  Receiver trusting;
  trusting.burst(f, true);
  ASSERT_EQ(trusting.out.size(), 1u);
  EXPECT_EQ(trusting.out[0].segments, 3u);

  std::vector<Bytes> g = flow(s, 2);
  g[1][14 + 8] ^= 1;  // TTL changed without fixing the IPv4 header checksum
  Receiver strict;
  EXPECT_EQ(strict.burst(g, true)[1], GroVerdict::deliver);
}

TEST(GroTable, BoundedBySegmentsAndBy64KiB) {
  PacketSpec s;
  GroConfig four;
  four.max_segments = 4;
  Receiver rx(four);
  rx.burst(flow(s, 10));
  ASSERT_EQ(rx.out.size(), 3u);
  EXPECT_EQ(rx.out[0].segments, 4u);
  EXPECT_EQ(rx.out[1].segments, 4u);
  EXPECT_EQ(rx.out[2].segments, 2u);
  EXPECT_EQ(be32(&rx.out[1].bytes[38]), 1000u + 4 * 1448);

  Receiver big;
  big.burst(flow(s, 50, 1448));  // 72400 bytes of payload
  ASSERT_EQ(big.out.size(), 2u);
  EXPECT_EQ(big.out[0].segments, 45u);  // 20 + 20 + 45 * 1448 = 65200 <= 65535
  EXPECT_LE(be16(&big.out[0].bytes[16]), 65535);
  EXPECT_EQ(big.out[0].bytes.size(), 14u + 40 + 45 * 1448);

  GroConfig small_frames;
  small_frames.max_frame_len = 9000;
  Receiver jumbo(small_frames);
  jumbo.burst(flow(s, 10));
  EXPECT_EQ(jumbo.out[0].segments, 6u);  // 54 + 6 * 1448 = 8742
}

TEST(GroTable, InterleavedFlowsKeepTheirOrder) {
  PacketSpec a;
  PacketSpec b;
  b.src_last = 9;
  b.sport = 1234;
  const std::vector<Bytes> fa = flow(a, 3);
  const std::vector<Bytes> fb = flow(b, 3);
  Receiver rx;
  rx.burst({fa[0], fb[0], fa[1], fb[1], fa[2], fb[2]});
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].bytes[14 + 15], 1);  // flow a first: it started first
  EXPECT_EQ(rx.out[1].bytes[14 + 15], 9);
  EXPECT_EQ(rx.out[0].segments, 3u);
  EXPECT_EQ(rx.out[1].segments, 3u);
}

TEST(GroTable, FullTableFlushesTheOldestFlow) {
  std::vector<Bytes> frames;
  for (std::uint32_t i = 0; i <= kGroMaxFlows; ++i) {
    PacketSpec s;
    s.sport = static_cast<std::uint16_t>(1000 + i);
    s.payload = testing::pattern(100);
    frames.push_back(testing::build_frame(s));
  }
  Receiver rx;
  std::uint32_t delivered_before_flush = 0;
  for (const Bytes& f : frames) {
    rx.table.offer(f.data(), static_cast<std::uint32_t>(f.size()), false, rx);
    if (&f == &frames.back()) delivered_before_flush = static_cast<std::uint32_t>(rx.out.size());
  }
  EXPECT_EQ(delivered_before_flush, 1u);
  EXPECT_EQ(rx.out[0].bytes, frames[0]);
  EXPECT_EQ(rx.table.held_flows(), kGroMaxFlows);
  rx.table.flush(rx);
  ASSERT_EQ(rx.out.size(), kGroMaxFlows + 1);
  for (std::uint32_t i = 0; i <= kGroMaxFlows; ++i) EXPECT_EQ(rx.out[i].bytes, frames[i]);
}

TEST(GroTable, Ipv4DisabledForAGuestWithoutTso4) {
  GroConfig v6only;
  v6only.ipv4 = false;
  Receiver rx(v6only);
  PacketSpec s;
  for (GroVerdict v : rx.burst(flow(s, 3))) EXPECT_EQ(v, GroVerdict::deliver);
  s.ipv6 = true;
  Receiver rx6(v6only);
  rx6.burst(flow(s, 3));
  ASSERT_EQ(rx6.out.size(), 1u);
  EXPECT_EQ(rx6.out[0].segments, 3u);
}

TEST(GroTable, GarbageIsDelivered) {
  Receiver rx;
  const Bytes junk = testing::pattern(40);
  EXPECT_EQ(rx.burst({junk, Bytes(3, 0)}),
            (std::vector<GroVerdict>{GroVerdict::deliver, GroVerdict::deliver}));
}

// ---- scattered frames (AF_XDP multi-buffer: a descriptor chain) ----------------

// A frame cut at `cuts` (ascending offsets inside it), every piece in a buffer
// of its own, so reading past a span's end never finds the next one's bytes.
struct Scattered {
  std::vector<Bytes> pieces;
  std::vector<ByteSpan> spans;

  Scattered(const Bytes& frame, const std::vector<std::uint32_t>& cuts) {
    std::uint32_t from = 0;
    for (std::uint32_t i = 0; i <= cuts.size(); ++i) {
      const std::uint32_t to = i < cuts.size() ? cuts[i] : static_cast<std::uint32_t>(frame.size());
      pieces.emplace_back(frame.begin() + from, frame.begin() + to);
      from = to;
    }
    for (const Bytes& p : pieces) {
      spans.push_back(ByteSpan{p.data(), static_cast<std::uint32_t>(p.size())});
    }
  }
  ByteSpans view() const {
    return ByteSpans(spans.data(), static_cast<std::uint32_t>(spans.size()));
  }
};

using Cutter = std::vector<std::uint32_t> (*)(const Bytes&);

// Offers every frame scattered the way `cuts` says, then flushes: what
// Receiver::burst does for contiguous frames.
std::vector<GroVerdict> burst_scattered(Receiver& rx, const std::vector<Bytes>& frames, Cutter cuts,
                                        bool verified = false) {
  std::vector<Scattered> scattered;
  scattered.reserve(frames.size());  // the pieces stay put until the flush
  std::vector<GroVerdict> verdicts;
  for (const Bytes& f : frames) {
    scattered.emplace_back(f, cuts(f));
    const GroResult r = rx.table.offer(scattered.back().view(), verified, rx);
    if (r.verdict == GroVerdict::deliver) rx.out.push_back({f, 0, {}, r.data_valid});
    verdicts.push_back(r.verdict);
  }
  rx.table.flush(rx);
  EXPECT_EQ(rx.table.held_flows(), 0u);
  return verdicts;
}

// Every offset from `from` to the frame's end: 1-byte spans.
std::vector<std::uint32_t> bytewise_from(const Bytes& f, std::uint32_t from) {
  std::vector<std::uint32_t> cuts;
  for (std::uint32_t i = from; i < f.size(); ++i) cuts.push_back(i);
  return cuts;
}

std::uint32_t header_end(const Bytes& f) {
  const testing::RefLayout l = testing::ref_layout(f);
  return static_cast<std::uint32_t>(l.l4 + (f[l.l4 + 12] >> 4) * 4u);
}

void expect_same_frames(const std::vector<Delivered>& got, const std::vector<Delivered>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].bytes, want[i].bytes);
    EXPECT_EQ(got[i].segments, want[i].segments);
    EXPECT_EQ(got[i].data_valid, want[i].data_valid);
    EXPECT_EQ(got[i].offload.gso.type, want[i].offload.gso.type);
    EXPECT_EQ(got[i].offload.gso.gso_size, want[i].offload.gso.gso_size);
    EXPECT_EQ(got[i].offload.gso.hdr_len, want[i].offload.gso.hdr_len);
    EXPECT_EQ(got[i].offload.csum.needed, want[i].offload.csum.needed);
    EXPECT_EQ(got[i].offload.csum.start, want[i].offload.csum.start);
    EXPECT_EQ(got[i].offload.csum.offset, want[i].offload.csum.offset);
  }
}

TEST(GroTableScattered, MergesLikeTheContiguousFrames) {
  struct Split {
    const char* what;
    Cutter cuts;
  };
  const Split splits[] = {
      {"inside the payload, at odd offsets",
       [](const Bytes& f) {
         return std::vector<std::uint32_t>{header_end(f) + 333, header_end(f) + 1001};
       }},
      {"exactly at the header end",
       [](const Bytes& f) { return std::vector<std::uint32_t>{header_end(f)}; }},
      {"at the header end and inside the payload",
       [](const Bytes& f) {
         return std::vector<std::uint32_t>{header_end(f), header_end(f) + 1, header_end(f) + 800};
       }},
      {"1-byte spans after the headers",
       [](const Bytes& f) { return bytewise_from(f, header_end(f)); }},
      {"1-byte spans at the end",
       [](const Bytes& f) { return bytewise_from(f, static_cast<std::uint32_t>(f.size()) - 9); }},
  };
  PacketSpec v4;
  v4.tcp_options = testing::timestamp_option(1000, 2000);
  PacketSpec v6;
  v6.ipv6 = true;
  v6.vlan_tpid = 0x8100;
  PacketSpec padded;  // Ethernet padding after the IP packet is no payload
  padded.padding = 7;
  for (const PacketSpec* spec : {&v4, &v6, &padded}) {
    for (const Split& split : splits) {
      SCOPED_TRACE(split.what);
      SCOPED_TRACE(spec == &v4 ? "ipv4" : spec == &v6 ? "ipv6 vlan" : "padded");
      // 1-byte spans need a payload small enough for the range budget.
      const bool bytewise = split.cuts == splits[3].cuts;
      const std::uint32_t mss = bytewise ? 30 : 1448;
      std::vector<Bytes> f = flow(*spec, 3, mss);
      PacketSpec last = *spec;  // a shorter one ends the super-frame
      last.seq = spec->seq + 3 * mss;
      last.ip_id = static_cast<std::uint16_t>(spec->ip_id + 3);
      last.payload = testing::pattern(mss - 3, 3 * mss);
      f.push_back(testing::build_frame(last));
      Receiver contiguous;
      const auto want = contiguous.burst(f);
      Receiver rx;
      EXPECT_EQ(burst_scattered(rx, f, split.cuts), want);
      ASSERT_EQ(rx.out.size(), 1u);
      EXPECT_EQ(rx.out[0].segments, 4u);
      expect_same_frames(rx.out, contiguous.out);
    }
  }
}

TEST(GroTableScattered, OneSpanIsAContiguousFrame) {
  const std::vector<Bytes> f = flow(PacketSpec{}, 3);
  Receiver contiguous;
  contiguous.burst(f);
  Receiver rx;
  burst_scattered(rx, f, [](const Bytes&) { return std::vector<std::uint32_t>{}; });
  expect_same_frames(rx.out, contiguous.out);
  EXPECT_EQ(rx.out[0].segments, 3u);
}

TEST(GroTableScattered, HeadersPastTheFirstSpanAreDeliveredAfterTheirFlow) {
  for (const std::uint32_t cut : {20u, 40u, 53u}) {  // inside Ethernet, IPv4, TCP
    SCOPED_TRACE(cut);
    const std::vector<Bytes> f = flow(PacketSpec{}, 4);
    Receiver rx;
    std::vector<GroVerdict> verdicts;
    std::vector<Scattered> keep;
    keep.reserve(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) {
      keep.emplace_back(f[i],
                        i == 2 ? std::vector<std::uint32_t>{cut} : std::vector<std::uint32_t>{});
      const GroResult r = rx.table.offer(keep.back().view(), false, rx);
      if (r.verdict == GroVerdict::deliver) rx.out.push_back({f[i], 0, {}, r.data_valid});
      verdicts.push_back(r.verdict);
    }
    rx.table.flush(rx);
    EXPECT_EQ(verdicts, (std::vector<GroVerdict>{GroVerdict::held, GroVerdict::merged,
                                                 GroVerdict::deliver, GroVerdict::held}));
    ASSERT_EQ(rx.out.size(), 3u);
    EXPECT_EQ(rx.out[0].segments, 2u);  // held segments go out first: the order holds
    EXPECT_EQ(rx.out[1].segments, 0u);
    EXPECT_EQ(rx.out[1].bytes, f[2]);
    EXPECT_FALSE(rx.out[1].data_valid);  // not verified
    EXPECT_EQ(rx.out[2].segments, 1u);
    EXPECT_EQ(rx.out[2].bytes, f[3]);
  }
}

TEST(GroTableScattered, TheRangeBudgetClosesTheSuperFrame) {
  // 1-byte spans: 50 payload ranges per segment, so two segments (100) fit
  // kGroMaxPayloadSpans and a third (150) does not.
  static_assert(kGroMaxPayloadSpans >= 100 && kGroMaxPayloadSpans < 150);
  const std::vector<Bytes> f = flow(PacketSpec{}, 5, 50);
  const Cutter bytewise = [](const Bytes& b) { return bytewise_from(b, header_end(b)); };
  Receiver rx;
  EXPECT_EQ(burst_scattered(rx, f, bytewise),
            (std::vector<GroVerdict>{GroVerdict::held, GroVerdict::merged, GroVerdict::held,
                                     GroVerdict::merged, GroVerdict::held}));
  // The same as two segments per super-frame from contiguous frames.
  GroConfig two;
  two.max_segments = 2;
  Receiver contiguous(two);
  contiguous.burst(f);
  ASSERT_EQ(rx.out.size(), 3u);
  EXPECT_EQ(rx.out[0].segments, 2u);
  EXPECT_EQ(rx.out[1].segments, 2u);
  EXPECT_EQ(rx.out[2].segments, 1u);
  expect_same_frames(rx.out, contiguous.out);

  // One segment past the budget on its own is delivered, after its flow.
  PacketSpec s;
  std::vector<Bytes> g = flow(s, 2, 200);
  Receiver alone;
  std::vector<Scattered> keep;
  keep.reserve(2);
  keep.emplace_back(g[0], std::vector<std::uint32_t>{});
  EXPECT_EQ(alone.table.offer(keep.back().view(), false, alone).verdict, GroVerdict::held);
  keep.emplace_back(g[1], bytewise(g[1]));  // 200 ranges
  const GroResult r = alone.table.offer(keep.back().view(), false, alone);
  EXPECT_EQ(r.verdict, GroVerdict::deliver);
  ASSERT_EQ(alone.out.size(), 1u);
  EXPECT_EQ(alone.out[0].bytes, g[0]);
  EXPECT_EQ(alone.table.held_flows(), 0u);
}

TEST(GroTableScattered, AContiguousSegmentDoesNotOverfillAFlowOfScatteredRanges) {
  // One queue offers both: a frame in one descriptor, one in a chain.
  const std::vector<Bytes> f = flow(PacketSpec{}, 2, kGroMaxPayloadSpans);
  Receiver rx;
  const Scattered first(f[0], bytewise_from(f[0], header_end(f[0])));  // the whole range budget
  EXPECT_EQ(rx.table.offer(first.view(), false, rx).verdict, GroVerdict::held);
  const GroResult r =
      rx.table.offer(f[1].data(), static_cast<std::uint32_t>(f[1].size()), false, rx);
  EXPECT_EQ(r.verdict, GroVerdict::held) << "a new super-frame, after the full one";
  rx.table.flush(rx);
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].segments, 1u);
  EXPECT_EQ(rx.out[0].bytes, f[0]);
  EXPECT_EQ(rx.out[1].bytes, f[1]);
}

TEST(GroTableScattered, TheChecksumCoversEverySpan) {
  PacketSpec s;
  std::vector<Bytes> f = flow(s, 3);
  const Cutter cuts = [](const Bytes& b) {
    return std::vector<std::uint32_t>{header_end(b) + 101, header_end(b) + 700};
  };
  f[1][54 + 400] ^= 0x01;  // a payload bit in the second span
  Receiver rx;
  EXPECT_EQ(burst_scattered(rx, f, cuts),
            (std::vector<GroVerdict>{GroVerdict::held, GroVerdict::deliver, GroVerdict::held}));
  ASSERT_EQ(rx.out.size(), 3u);
  EXPECT_EQ(rx.out[0].bytes, f[0]);
  EXPECT_TRUE(rx.out[0].data_valid);
  EXPECT_EQ(rx.out[1].bytes, f[1]);
  EXPECT_FALSE(rx.out[1].data_valid);
  EXPECT_EQ(rx.out[2].bytes, f[2]);

  f[1][54 + 400] ^= 0x01;
  f[1][54 + 1000] ^= 0x80;  // and one in the third
  Receiver third;
  EXPECT_EQ(burst_scattered(third, f, cuts)[1], GroVerdict::deliver);

  Receiver trusting;  // the device verified it
  burst_scattered(trusting, f, cuts, true);
  ASSERT_EQ(trusting.out.size(), 1u);
  EXPECT_EQ(trusting.out[0].segments, 3u);
}

TEST(GroTableScattered, JumboSegmentsInUmemFrames) {
  // 9000-byte MTU segments in 4096-byte UMEM frames (3840 bytes of room):
  // three spans each; seven make a 62760-byte IP packet.
  PacketSpec s;
  const std::vector<Bytes> f = flow(s, 8, 8960);
  const Cutter umem = [](const Bytes&) { return std::vector<std::uint32_t>{3840, 7680}; };
  Receiver rx;
  burst_scattered(rx, f, umem);
  ASSERT_EQ(rx.out.size(), 2u);
  EXPECT_EQ(rx.out[0].segments, 7u);
  EXPECT_EQ(rx.out[0].bytes.size(), 14u + 40 + 7 * 8960);
  EXPECT_EQ(be16(&rx.out[0].bytes[16]), 40 + 7 * 8960);
  EXPECT_EQ(rx.out[0].offload.gso.gso_size, 8960);
  EXPECT_EQ(rx.out[1].segments, 1u);
  EXPECT_EQ(rx.out[1].bytes, f[7]);
  Receiver contiguous;
  contiguous.burst(f);
  expect_same_frames(rx.out, contiguous.out);
}

}  // namespace
}  // namespace xdpvhost::net

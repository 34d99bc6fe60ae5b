#include "net/gso_segmenter.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "segment_sink.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::be16;
using testing::be32;
using testing::Bytes;
using testing::PacketSpec;
using testing::VectorSink;

struct Gso {
  Bytes frame;
  ValidatedOffload offload;
};

Gso make_gso(PacketSpec s, std::uint32_t payload, std::uint16_t mss = 1448, bool ecn = false) {
  s.csum = testing::L4Checksum::partial;
  s.payload = testing::pattern(payload);
  Gso g{testing::build_frame(s), {}};
  const testing::RefLayout l = testing::ref_layout(g.frame);
  OffloadRequest r;
  r.gso.type = s.udp ? GsoType::udp_l4 : s.ipv6 ? GsoType::tcpv6 : GsoType::tcpv4;
  r.gso.gso_size = mss;
  r.gso.ecn = ecn;
  r.csum = {true, static_cast<std::uint16_t>(l.l4), static_cast<std::uint16_t>(s.udp ? 6 : 16)};
  OffloadPolicy p;
  p.mtu = 9000;
  const ByteSpan span{g.frame.data(), static_cast<std::uint32_t>(g.frame.size())};
  const OffloadCheck c = validate_offload(ByteSpans(span), r, p);
  EXPECT_TRUE(c.ok()) << counter_name(c.error);
  g.offload = c.offload;
  return g;
}

std::vector<Bytes> run(const Gso& g, ChecksumMode mode = ChecksumMode::software,
                       std::vector<SegmentMeta>* metas = nullptr) {
  const ByteSpan span{g.frame.data(), static_cast<std::uint32_t>(g.frame.size())};
  VectorSink sink(9100);
  const SegmentResult r = segment(ByteSpans(span), g.offload, mode, sink);
  EXPECT_EQ(r.status, SegmentStatus::done);
  EXPECT_EQ(r.segments, g.offload.segments);
  if (metas) *metas = sink.metas;
  return sink.segments;
}

// Checks everything a receiver sees of TSO segments against the original.
void expect_tcp_segments(const Gso& g, const std::vector<Bytes>& segs, std::uint16_t mss) {
  const testing::RefLayout l = testing::ref_layout(g.frame);
  const std::size_t hl = g.offload.layout.header_len();
  const std::size_t payload = g.frame.size() - hl;
  ASSERT_EQ(segs.size(), (payload + mss - 1) / mss);
  const std::uint8_t flags = g.frame[l.l4 + 13];
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const Bytes& s = segs[i];
    const bool last = i + 1 == segs.size();
    const std::size_t n = last ? payload - i * mss : mss;
    SCOPED_TRACE(i);
    ASSERT_EQ(s.size(), hl + n);
    EXPECT_TRUE(std::equal(s.begin() + hl, s.end(), g.frame.begin() + hl + i * mss));
    EXPECT_TRUE(std::equal(s.begin(), s.begin() + l.l3, g.frame.begin()));  // L2 unchanged
    if (l.ipv6) {
      EXPECT_EQ(be16(&s[l.l3 + 4]), s.size() - l.l3 - 40);
      EXPECT_TRUE(std::equal(s.begin() + l.l3, s.begin() + l.l3 + 4, g.frame.begin() + l.l3));
    } else {
      EXPECT_EQ(be16(&s[l.l3 + 2]), s.size() - l.l3);
      EXPECT_EQ(be16(&s[l.l3 + 4]), static_cast<std::uint16_t>(be16(&g.frame[l.l3 + 4]) + i));
      EXPECT_EQ(s[l.l3 + 1], g.frame[l.l3 + 1]);  // TOS with its ECN bits
      EXPECT_TRUE(testing::ref_ipv4_header_ok(s));
    }
    EXPECT_EQ(be32(&s[l.l4 + 4]), be32(&g.frame[l.l4 + 4]) + static_cast<std::uint32_t>(i * mss));
    EXPECT_EQ(be32(&s[l.l4 + 8]), be32(&g.frame[l.l4 + 8]));  // ack
    std::uint8_t want = flags;
    if (!last) want &= static_cast<std::uint8_t>(~(0x01 | 0x08));
    if (i != 0) want &= static_cast<std::uint8_t>(~0x80);
    EXPECT_EQ(s[l.l4 + 13], want);
    EXPECT_TRUE(
        std::equal(s.begin() + l.l4 + 14, s.begin() + l.l4 + 16, g.frame.begin() + l.l4 + 14));
    EXPECT_TRUE(std::equal(s.begin() + l.l4 + 20, s.begin() + hl, g.frame.begin() + l.l4 + 20));
    EXPECT_TRUE(testing::ref_l4_checksum_ok(s));
  }
}

TEST(GsoSegmenter, Ipv4WithTimestampsLastSegmentShorter) {
  PacketSpec s;
  s.flags = 0x18;  // ACK PSH
  s.tcp_options = testing::timestamp_option(0x01020304, 0x0a0b0c0d);
  const Gso g = make_gso(s, 10000);
  const auto segs = run(g);
  expect_tcp_segments(g, segs, 1448);
  EXPECT_EQ(segs.back().size(), 66u + 10000 - 6 * 1448);
  EXPECT_EQ(segs.front()[34 + 13], 0x10);
  EXPECT_EQ(segs.back()[34 + 13], 0x18);
}

TEST(GsoSegmenter, FinAndPshOnlyOnTheLastCwrOnlyOnTheFirst) {
  PacketSpec s;
  s.flags = 0x80 | 0x10 | 0x08 | 0x01;  // CWR ACK PSH FIN
  s.tos = 0x02;                         // ECT(0)
  const Gso g = make_gso(s, 5000, 1000, true);
  const auto segs = run(g);
  ASSERT_EQ(segs.size(), 5u);
  expect_tcp_segments(g, segs, 1000);
  EXPECT_EQ(segs[0][34 + 13], 0x90);
  EXPECT_EQ(segs[1][34 + 13], 0x10);
  EXPECT_EQ(segs[4][34 + 13], 0x19);
}

TEST(GsoSegmenter, Ipv6WithVlanTag) {
  PacketSpec s;
  s.ipv6 = true;
  s.vlan_tpid = 0x8100;
  s.tos = 0x03;  // CE
  s.tcp_options = testing::timestamp_option(7, 8);
  const Gso g = make_gso(s, 20000, 1428);
  expect_tcp_segments(g, run(g), 1428);
}

TEST(GsoSegmenter, Ipv4Options) {
  PacketSpec s;
  s.ipv4_options = {0x94, 0x04, 0, 0, 1, 1, 1, 0};
  const Gso g = make_gso(s, 4000);
  const auto segs = run(g);
  expect_tcp_segments(g, segs, 1448);
  for (const Bytes& seg : segs) EXPECT_EQ(seg[14], 0x47);
}

TEST(GsoSegmenter, IdAndSequenceWrap) {
  PacketSpec s;
  s.ip_id = 0xffff;
  s.seq = 0xfffffc00;
  const Gso g = make_gso(s, 3000, 1000);
  const auto segs = run(g);
  expect_tcp_segments(g, segs, 1000);
  EXPECT_EQ(be16(&segs[1][18]), 0);
  EXPECT_EQ(be32(&segs[1][38]), 0xfffffc00u + 1000);
  EXPECT_EQ(be32(&segs[2][38]), 0x000003d0u);
}

TEST(GsoSegmenter, UsoIpv4AndIpv6) {
  for (bool v6 : {false, true}) {
    PacketSpec s;
    s.udp = true;
    s.ipv6 = v6;
    const Gso g = make_gso(s, 3000, 1200);
    const auto segs = run(g);
    ASSERT_EQ(segs.size(), 3u);
    const testing::RefLayout l = testing::ref_layout(g.frame);
    for (std::size_t i = 0; i < segs.size(); ++i) {
      const Bytes& seg = segs[i];
      const std::size_t n = i == 2 ? 600 : 1200;
      ASSERT_EQ(seg.size(), l.l4 + 8 + n);
      EXPECT_EQ(be16(&seg[l.l4 + 4]), 8 + n);  // UDP length
      EXPECT_TRUE(testing::ref_l4_checksum_ok(seg));
      EXPECT_TRUE(testing::ref_ipv4_header_ok(seg));
      if (!v6) {
        EXPECT_EQ(be16(&seg[18]), 0x1234 + i);
      }
      EXPECT_TRUE(
          std::equal(seg.begin() + l.l4 + 8, seg.end(), g.frame.begin() + l.l4 + 8 + i * 1200));
    }
  }
}

TEST(GsoSegmenter, PartialChecksumsForTheNic) {
  PacketSpec s;
  s.ipv6 = true;
  s.tcp_options = testing::timestamp_option(1, 2);
  const Gso g = make_gso(s, 7000);
  std::vector<SegmentMeta> metas;
  auto segs = run(g, ChecksumMode::partial, &metas);
  ASSERT_EQ(segs.size(), 5u);
  for (std::size_t i = 0; i < segs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(metas[i].csum_partial);
    EXPECT_EQ(metas[i].csum_start, 54);
    EXPECT_EQ(metas[i].csum_offset, 16);
    EXPECT_EQ(metas[i].index, i);
    EXPECT_EQ(metas[i].last, i == 4);
    EXPECT_EQ(be16(&segs[i][54 + 16]), testing::ref_partial_value(segs[i]));
    testing::ref_complete(segs[i], metas[i].csum_start, metas[i].csum_offset);
    EXPECT_TRUE(testing::ref_l4_checksum_ok(segs[i]));
  }
}

TEST(GsoSegmenter, ScatteredInputGivesTheSameSegments) {
  PacketSpec s;
  s.tcp_options = testing::timestamp_option(1, 2);
  s.vlan_tpid = 0x88a8;
  const Gso g = make_gso(s, 30001);
  const auto contiguous = run(g);
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<ByteSpan> spans;
    std::uint32_t at = 0;
    while (at < g.frame.size()) {
      std::uint32_t n = 1 + rng() % (round < 10 ? 7 : 3000);
      if (n > g.frame.size() - at) n = static_cast<std::uint32_t>(g.frame.size() - at);
      spans.push_back({g.frame.data() + at, n});
      at += n;
    }
    const ByteSpans frame(spans.data(), static_cast<std::uint32_t>(spans.size()));
    VectorSink sink;
    ASSERT_EQ(segment(frame, g.offload, ChecksumMode::software, sink).status, SegmentStatus::done);
    ASSERT_EQ(sink.segments, contiguous) << "round " << round;
  }
}

TEST(GsoSegmenter, NonGsoChecksumIsFinished) {
  PacketSpec s;
  s.udp = true;
  s.payload = testing::pattern(333);
  s.csum = testing::L4Checksum::partial;
  s.padding = 3;
  const Bytes f = testing::build_frame(s);
  OffloadRequest r;
  r.csum = {true, 34, 6};
  const ByteSpan span{f.data(), static_cast<std::uint32_t>(f.size())};
  const OffloadCheck c = validate_offload(ByteSpans(span), r, {});
  ASSERT_TRUE(c.ok());
  VectorSink sink;
  ASSERT_EQ(segment(ByteSpans(span), c.offload, ChecksumMode::software, sink).segments, 1u);
  const Bytes& out = sink.segments[0];
  EXPECT_EQ(out.size(), f.size() - 3);  // padding dropped
  EXPECT_TRUE(testing::ref_l4_checksum_ok(out));
  EXPECT_FALSE(sink.metas[0].csum_partial);

  VectorSink nic;
  segment(ByteSpans(span), c.offload, ChecksumMode::partial, nic);
  EXPECT_TRUE(nic.metas[0].csum_partial);
  EXPECT_EQ(nic.metas[0].csum_start, 34);
  EXPECT_EQ(nic.metas[0].csum_offset, 6);
  EXPECT_TRUE(std::equal(nic.segments[0].begin(), nic.segments[0].end(), f.begin()));
}

TEST(GsoSegmenter, NoOffloadCopiesTheFrame) {
  const Bytes f = testing::pattern(77);
  const ByteSpan span{f.data(), 77};
  VectorSink sink;
  ASSERT_EQ(segment(ByteSpans(span), ValidatedOffload{}, ChecksumMode::software, sink).segments,
            1u);
  EXPECT_EQ(sink.segments[0], f);
}

TEST(GsoSegmenter, SinkRunsDryOrBufferTooSmall) {
  PacketSpec s;
  const Gso g = make_gso(s, 10000);
  const ByteSpan span{g.frame.data(), static_cast<std::uint32_t>(g.frame.size())};
  VectorSink two(2048, 2);
  SegmentResult r = segment(ByteSpans(span), g.offload, ChecksumMode::software, two);
  EXPECT_EQ(r.status, SegmentStatus::out_of_buffers);
  EXPECT_EQ(r.segments, 2u);
  VectorSink small(1000);
  r = segment(ByteSpans(span), g.offload, ChecksumMode::software, small);
  EXPECT_EQ(r.status, SegmentStatus::buffer_too_small);
  EXPECT_EQ(r.segments, 0u);
  VectorSink exact(54 + 1448);
  EXPECT_EQ(segment(ByteSpans(span), g.offload, ChecksumMode::software, exact).status,
            SegmentStatus::done);
}

TEST(GsoSegmenter, SegmenterIteratesByHand) {
  PacketSpec s;
  const Gso g = make_gso(s, 3000);
  const ByteSpan span{g.frame.data(), static_cast<std::uint32_t>(g.frame.size())};
  GsoSegmenter seg(ByteSpans(span), g.offload, ChecksumMode::software);
  EXPECT_EQ(seg.total(), 3u);
  std::uint8_t out[2048];
  SegmentMeta meta;
  EXPECT_EQ(seg.next_len(), 54u + 1448);
  EXPECT_FALSE(seg.write_next(out, 100, meta));  // does not fit: nothing consumed
  EXPECT_EQ(seg.remaining(), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(seg.write_next(out, sizeof out, meta));
  EXPECT_EQ(meta.len, 54u + 3000 - 2 * 1448);
  EXPECT_EQ(seg.next_len(), 0u);
  EXPECT_FALSE(seg.write_next(out, sizeof out, meta));
}

}  // namespace
}  // namespace xdpvhost::net

#include "net/offload_validation.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "net/virtio_net_offload.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::Bytes;
using testing::PacketSpec;

// A TSO frame as a Linux guest sends it: NEEDS_CSUM at the TCP checksum,
// hdr_len = skb_headlen (here: the headers plus 10 bytes of payload).
struct Gso {
  Bytes frame;
  OffloadRequest req;
};

Gso linux_tso(PacketSpec s, std::uint32_t payload = 9000, std::uint16_t mss = 1448) {
  s.csum = testing::L4Checksum::partial;
  s.payload = testing::pattern(payload);
  Gso g{testing::build_frame(s), {}};
  const testing::RefLayout l = testing::ref_layout(g.frame);
  const std::uint32_t header_len = static_cast<std::uint32_t>(l.l4) + (s.udp ? 8 : 20) +
                                   static_cast<std::uint32_t>(s.tcp_options.size());
  g.req.gso.type = s.udp ? GsoType::udp_l4 : s.ipv6 ? GsoType::tcpv6 : GsoType::tcpv4;
  g.req.gso.gso_size = mss;
  g.req.gso.hdr_len = static_cast<std::uint16_t>(header_len + 10);
  g.req.csum = {true, static_cast<std::uint16_t>(l.l4), static_cast<std::uint16_t>(s.udp ? 6 : 16)};
  return g;
}

OffloadCheck check(const Bytes& f, const OffloadRequest& r, const OffloadPolicy& p = {}) {
  const ByteSpan span{f.data(), static_cast<std::uint32_t>(f.size())};
  return validate_offload(ByteSpans(span), r, p);
}

TEST(OffloadValidation, NothingRequestedIsNotParsed) {
  const Bytes junk(5, 0xee);
  const OffloadCheck c = check(junk, {});
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.offload.segments, 1u);
  EXPECT_EQ(c.offload.layout.l3, L3Kind::none);
}

TEST(OffloadValidation, LinuxTsoIpv4) {
  PacketSpec s;
  s.tcp_options = testing::timestamp_option(100, 200);
  const Gso g = linux_tso(s);
  const OffloadCheck c = check(g.frame, g.req);
  ASSERT_TRUE(c.ok()) << counter_name(c.error);
  EXPECT_EQ(c.offload.segments, 7u);  // 9000 / 1448 = 6.2
  EXPECT_EQ(c.offload.layout.header_len(), 14u + 20 + 32);
  EXPECT_TRUE(c.offload.is_gso());
}

TEST(OffloadValidation, HdrLenIsAHint) {
  PacketSpec s;
  Gso g = linux_tso(s);
  for (std::uint16_t hint : {0, 14, 54, 200, static_cast<int>(g.frame.size())}) {
    g.req.gso.hdr_len = hint;
    EXPECT_TRUE(check(g.frame, g.req).ok()) << hint;
  }
  g.req.gso.hdr_len = static_cast<std::uint16_t>(g.frame.size() + 1);
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_bad_hdr_len);
  OffloadPolicy exact;
  exact.exact_hdr_len = true;
  g.req.gso.hdr_len = 64;
  EXPECT_EQ(check(g.frame, g.req, exact).error, OffloadError::gso_bad_hdr_len);
  g.req.gso.hdr_len = 54;
  EXPECT_TRUE(check(g.frame, g.req, exact).ok());
}

TEST(OffloadValidation, GsoSize) {
  PacketSpec s;
  Gso g = linux_tso(s);
  g.req.gso.gso_size = 0;
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_bad_size);
  g.req.gso.gso_size = 1461;  // 20 + 20 + 1461 > 1500
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_size_too_big);
  g.req.gso.gso_size = 1460;
  EXPECT_TRUE(check(g.frame, g.req).ok());
  OffloadPolicy jumbo;
  jumbo.mtu = 9000;
  g.req.gso.gso_size = 8960;
  const OffloadCheck c = check(g.frame, g.req, jumbo);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.offload.segments, 2u);
}

// Segments smaller than Linux allows would turn a short descriptor into
// hundreds of packets: one 322-byte frame of gso_size 1 was 256 one-byte
// packets on the wire.
TEST(OffloadValidation, GsoSizeBelowTheProtocolsMinimumIsRefused) {
  struct Case {
    bool ipv6, udp;
    std::uint16_t min;
  };
  for (const Case c :
       {Case{false, false, 48}, Case{true, false, 88}, Case{false, true, 8}, Case{true, true, 8}}) {
    PacketSpec s;
    s.ipv6 = c.ipv6;
    s.udp = c.udp;
    Gso g = linux_tso(s, 268, 1);
    EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_bad_size) << c.min;
    g.req.gso.gso_size = static_cast<std::uint16_t>(c.min - 1);
    EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_bad_size) << c.min;
    g.req.gso.gso_size = c.min;
    const OffloadCheck ok = check(g.frame, g.req);
    EXPECT_TRUE(ok.ok()) << c.min << ": " << counter_name(ok.error);
    EXPECT_EQ(ok.offload.segments, (268u + c.min - 1) / c.min);
  }
  EXPECT_EQ(min_gso_size(GsoType::tcpv4), 48);
}

TEST(OffloadValidation, PayloadThatFitsOneSegmentIsValid) {
  PacketSpec s;
  const Gso g = linux_tso(s, 1000);
  const OffloadCheck c = check(g.frame, g.req);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.offload.segments, 1u);
}

TEST(OffloadValidation, TooManySegmentsAndTooLong) {
  PacketSpec s;
  Gso g = linux_tso(s, 65000);
  g.req.gso.gso_size = 500;  // 130 segments: a Linux guest at the path-MTU floor
  EXPECT_TRUE(check(g.frame, g.req).ok());
  g.req.gso.gso_size = 200;  // 325 segments
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_too_many_segments);
  OffloadPolicy p;
  p.max_segments = 325;
  EXPECT_TRUE(check(g.frame, g.req, p).ok());
  p.max_frame_len = 30000;
  EXPECT_EQ(check(g.frame, g.req, p).error, OffloadError::gso_frame_too_long);
}

TEST(OffloadValidation, ChecksumStartAndOffsetOnGso) {
  PacketSpec s;
  Gso g = linux_tso(s);
  OffloadRequest r = g.req;
  r.csum.start = 6;  // inside the Ethernet header
  EXPECT_EQ(check(g.frame, r).error, OffloadError::csum_bad_start);
  r.csum.start = 14 + 10;  // inside the IP header
  EXPECT_EQ(check(g.frame, r).error, OffloadError::csum_bad_start);
  r = g.req;
  r.csum.offset = 6;  // the UDP field on a TCP header
  EXPECT_EQ(check(g.frame, r).error, OffloadError::csum_bad_offset);
  r = g.req;
  r.csum.needed = false;  // TSO without NEEDS_CSUM: every checksum is recomputed
  EXPECT_TRUE(check(g.frame, r).ok());
}

TEST(OffloadValidation, ChecksumOnly) {
  PacketSpec s;
  s.payload = testing::pattern(300);
  s.csum = testing::L4Checksum::partial;
  const Bytes f = testing::build_frame(s);
  OffloadRequest r;
  r.csum = {true, 34, 16};
  EXPECT_TRUE(check(f, r).ok());
  r.csum = {true, 0, 16};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_start);
  r.csum = {true, 20, 16};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_start);
  r.csum = {true, 34, 6};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_offset);
  r.csum = {true, static_cast<std::uint16_t>(f.size()), 0};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_start);
  r.csum = {true, 100, static_cast<std::uint16_t>(f.size() - 101)};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_offset);
  // Deeper than the TCP header (an inner packet of a tunnel): range only.
  r.csum = {true, 100, 6};
  EXPECT_TRUE(check(f, r).ok());
  r.csum = {true, 100, 7};  // odd: the field straddles two words of the sum
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_offset);
  // gso_size and hdr_len of a non-GSO frame mean nothing.
  r.csum = {true, 34, 16};
  r.gso.hdr_len = 65000;
  r.gso.gso_size = 0;
  EXPECT_TRUE(check(f, r).ok());
}

TEST(OffloadValidation, ChecksumOnlyNonIp) {
  Bytes f(60, 0);
  f[12] = 0x88;
  f[13] = 0xb5;  // local experimental EtherType
  OffloadRequest r;
  r.csum = {true, 20, 4};
  EXPECT_TRUE(check(f, r).ok());
  r.csum = {true, 10, 4};
  EXPECT_EQ(check(f, r).error, OffloadError::csum_bad_start);
}

TEST(OffloadValidation, TypeMismatches) {
  PacketSpec v4;
  Gso g = linux_tso(v4);
  g.req.gso.type = GsoType::tcpv6;
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_ip_version_mismatch);
  g.req.gso.type = GsoType::udp_l4;  // a TCP frame with gso_type UDP
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_l4_mismatch);

  PacketSpec v6;
  v6.ipv6 = true;
  Gso h = linux_tso(v6);
  h.req.gso.type = GsoType::tcpv4;
  EXPECT_EQ(check(h.frame, h.req).error, OffloadError::gso_ip_version_mismatch);

  PacketSpec udp;
  udp.udp = true;
  Gso u = linux_tso(udp);
  ASSERT_TRUE(check(u.frame, u.req).ok());
  u.req.gso.type = GsoType::tcpv4;
  EXPECT_EQ(check(u.frame, u.req).error, OffloadError::gso_l4_mismatch);

  Bytes arp(200, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(check(arp, g.req).error, OffloadError::gso_not_ip);
}

TEST(OffloadValidation, UsoRules) {
  PacketSpec s;
  s.udp = true;
  s.ipv6 = true;
  Gso u = linux_tso(s);
  ASSERT_TRUE(check(u.frame, u.req).ok());
  OffloadRequest r = u.req;
  r.csum.needed = false;
  EXPECT_EQ(check(u.frame, r).error, OffloadError::gso_uso_no_csum);
  r = u.req;
  r.gso.ecn = true;
  EXPECT_EQ(check(u.frame, r).error, OffloadError::gso_ecn_refused);
}

TEST(OffloadValidation, EcnNeedsHostEcn) {
  PacketSpec s;
  s.flags = 0x90;  // ACK | CWR
  Gso g = linux_tso(s);
  g.req.gso.ecn = true;
  EXPECT_TRUE(check(g.frame, g.req).ok());
  OffloadPolicy no_ecn;
  no_ecn.ecn = false;
  EXPECT_EQ(check(g.frame, g.req, no_ecn).error, OffloadError::gso_ecn_refused);
}

TEST(OffloadValidation, Ipv4OptionsAreCarried) {
  PacketSpec s;
  s.ipv4_options = {0x94, 0x04, 0, 0};
  const Gso g = linux_tso(s);
  const OffloadCheck c = check(g.frame, g.req);
  ASSERT_TRUE(c.ok()) << counter_name(c.error);
  EXPECT_EQ(c.offload.layout.l4_offset, 38);
  OffloadRequest r = g.req;
  r.csum.start = 34;  // where the TCP header would be without options
  EXPECT_EQ(check(g.frame, r).error, OffloadError::csum_bad_start);
}

TEST(OffloadValidation, TruncatedTcpHeader) {
  PacketSpec s;
  s.payload = {};
  Bytes f = testing::build_frame(s);
  f.resize(14 + 20 + 12);  // half a TCP header ...
  f[14 + 3] = 32;          // ... and an IPv4 total length that says so
  OffloadRequest r;
  r.gso = {GsoType::tcpv4, false, 1448, 0};
  r.csum = {true, 34, 16};
  EXPECT_EQ(check(f, r).error, OffloadError::truncated_l4);
  f[14 + 3] = 40;  // total length past the frame
  EXPECT_EQ(check(f, r).error, OffloadError::bad_ip_length);
}

TEST(OffloadValidation, IpLengthMustEndAtTheFrame) {
  PacketSpec s;
  s.padding = 4;
  const Gso g = linux_tso(s);
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::gso_length_mismatch);
}

TEST(OffloadValidation, Fragments) {
  PacketSpec s;
  s.df = false;
  s.frag = 0x2000;
  const Gso g = linux_tso(s);
  EXPECT_EQ(check(g.frame, g.req).error, OffloadError::ip_fragment);
  OffloadRequest r;
  r.csum = g.req.csum;
  EXPECT_EQ(check(g.frame, r).error, OffloadError::ip_fragment);
}

TEST(OffloadValidation, DecodeVirtioHeader) {
  OffloadRequest r;
  VirtioNetOffload h;
  h.flags = kVirtioNetNeedsCsum | kVirtioNetDataValid | 0x40;
  h.gso_type = kVirtioGsoTcpv6 | kVirtioGsoEcn;
  h.gso_size = 1440;
  h.hdr_len = 74;
  h.csum_start = 54;
  h.csum_offset = 16;
  ASSERT_EQ(decode_virtio_offload(h, r), OffloadError::none);
  EXPECT_EQ(r.gso.type, GsoType::tcpv6);
  EXPECT_TRUE(r.gso.ecn);
  EXPECT_EQ(r.gso.gso_size, 1440);
  EXPECT_EQ(r.gso.hdr_len, 74);
  EXPECT_TRUE(r.csum.needed);
  EXPECT_EQ(r.csum.start, 54);
  EXPECT_EQ(r.csum.offset, 16);
  for (std::uint8_t bad : {std::uint8_t{kVirtioGsoUdp}, std::uint8_t{2}, std::uint8_t{6},
                           std::uint8_t{0x80}, std::uint8_t{0x7f}}) {
    h.gso_type = bad;
    EXPECT_EQ(decode_virtio_offload(h, r), OffloadError::gso_bad_type) << int{bad};
  }
  h = {};
  h.gso_size = 100;  // ignored without a GSO type
  ASSERT_EQ(decode_virtio_offload(h, r), OffloadError::none);
  EXPECT_FALSE(r.any());
}

TEST(OffloadValidation, EncodeVirtioHeader) {
  OffloadRequest r;
  EXPECT_EQ(encode_virtio_offload(r, true).flags, kVirtioNetDataValid);
  EXPECT_EQ(encode_virtio_offload(r, false).flags, 0);
  r.gso = {GsoType::tcpv4, true, 1448, 66};
  r.csum = {true, 34, 16};
  const VirtioNetOffload h = encode_virtio_offload(r, true);
  EXPECT_EQ(h.flags, kVirtioNetNeedsCsum);
  EXPECT_EQ(h.gso_type, kVirtioGsoTcpv4 | kVirtioGsoEcn);
  EXPECT_EQ(h.gso_size, 1448);
  EXPECT_EQ(h.hdr_len, 66);
  EXPECT_EQ(h.csum_start, 34);
  EXPECT_EQ(h.csum_offset, 16);
  OffloadRequest back;
  ASSERT_EQ(decode_virtio_offload(h, back), OffloadError::none);
  EXPECT_EQ(back.gso.type, GsoType::tcpv4);
}

TEST(OffloadValidation, CounterNamesAreDistinctSnakeCase) {
  std::set<std::string> names;
  const std::regex snake("[a-z][a-z0-9_]*");
  for (std::size_t i = 1; i < kOffloadErrorCount; ++i) {
    const std::string n = counter_name(static_cast<OffloadError>(i));
    EXPECT_TRUE(std::regex_match(n, snake)) << n;
    EXPECT_NE(n, "unknown");
    EXPECT_NE(n, "none");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kOffloadErrorCount - 1);
  EXPECT_STREQ(counter_name(OffloadError::gso_bad_size), "gso_bad_size");
}

}  // namespace
}  // namespace xdpvhost::net

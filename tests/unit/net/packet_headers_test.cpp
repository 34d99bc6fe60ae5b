#include "net/packet_headers.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::Bytes;
using testing::PacketSpec;

FrameLayout parse(const Bytes& f, ParseError expect = ParseError::none) {
  FrameLayout l;
  EXPECT_EQ(parse_headers(f.data(), static_cast<std::uint32_t>(f.size()),
                          static_cast<std::uint32_t>(f.size()), l),
            expect);
  return l;
}

TEST(PacketHeaders, Ipv4Tcp) {
  PacketSpec s;
  s.payload = testing::pattern(100);
  const FrameLayout l = parse(testing::build_frame(s));
  EXPECT_EQ(l.vlan_tpid, 0);
  EXPECT_EQ(l.l3_offset, 14);
  EXPECT_EQ(l.l3, L3Kind::ipv4);
  EXPECT_EQ(l.l4_offset, 34);
  EXPECT_EQ(l.l4, L4Kind::tcp);
  EXPECT_EQ(l.l4_header_len, 20);
  EXPECT_EQ(l.header_len(), 54u);
  EXPECT_EQ(l.packet_end, 154u);
  EXPECT_EQ(l.payload_len(), 100u);
  EXPECT_FALSE(l.ip_fragment);
}

TEST(PacketHeaders, Ipv4OptionsAndTcpOptions) {
  PacketSpec s;
  s.ipv4_options = {0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00};  // router alert, NOPs, EOL
  s.tcp_options = testing::timestamp_option(1, 2);
  s.payload = testing::pattern(10);
  const FrameLayout l = parse(testing::build_frame(s));
  EXPECT_EQ(l.l3_header_len(), 28u);
  EXPECT_EQ(l.l4_offset, 42);
  EXPECT_EQ(l.l4_header_len, 32);
  EXPECT_EQ(l.payload_len(), 10u);
}

TEST(PacketHeaders, VlanTaggedIpv6Udp) {
  for (std::uint16_t tpid : {std::uint16_t{0x8100}, std::uint16_t{0x88a8}}) {
    PacketSpec s;
    s.ipv6 = true;
    s.udp = true;
    s.vlan_tpid = tpid;
    s.payload = testing::pattern(33);
    const FrameLayout l = parse(testing::build_frame(s));
    EXPECT_EQ(l.vlan_tpid, tpid);
    EXPECT_EQ(l.ethertype, kEtherTypeIpv6);
    EXPECT_EQ(l.l3_offset, 18);
    EXPECT_EQ(l.l3, L3Kind::ipv6);
    EXPECT_EQ(l.l4_offset, 58);
    EXPECT_EQ(l.l4, L4Kind::udp);
    EXPECT_EQ(l.header_len(), 66u);
    EXPECT_EQ(l.packet_end, 66u + 33);
  }
}

TEST(PacketHeaders, TwoTagsAreNotIp) {
  PacketSpec s;
  s.vlan_tpid = 0x88a8;
  Bytes f = testing::build_frame(s);
  f.insert(f.begin() + 16, {0x81, 0x00, 0x00, 0x05});  // an inner 802.1Q tag
  const FrameLayout l = parse(f);
  EXPECT_EQ(l.l3, L3Kind::none);
  EXPECT_EQ(l.ethertype, kEtherTypeVlan);
}

TEST(PacketHeaders, Ipv6HopByHopAndDestinationOptions) {
  PacketSpec s;
  s.ipv6 = true;
  s.ipv6_first_next = 0;  // hop-by-hop
  // HBH (next: dest opts, 8 bytes: PadN), dest opts (next: TCP, 16 bytes).
  s.ipv6_ext = {60, 0, 1, 4, 0, 0, 0, 0, 6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  s.payload = testing::pattern(5);
  const FrameLayout l = parse(testing::build_frame(s));
  EXPECT_EQ(l.l4_offset, 14 + 40 + 24);
  EXPECT_EQ(l.ip_protocol, kIpProtoTcp);
  EXPECT_EQ(l.l4, L4Kind::tcp);
}

TEST(PacketHeaders, Ipv6UnsupportedExtensionHeaders) {
  PacketSpec s;
  s.ipv6 = true;
  s.ipv6_first_next = 43;  // routing
  s.ipv6_ext = {6, 0, 0, 0, 0, 0, 0, 0};
  parse(testing::build_frame(s), ParseError::ipv6_ext_unsupported);
  s.ipv6_first_next = 60;  // dest opts, then a hop-by-hop (only allowed first)
  s.ipv6_ext = {0, 0, 1, 4, 0, 0, 0, 0, 6, 0, 1, 4, 0, 0, 0, 0};
  parse(testing::build_frame(s), ParseError::ipv6_ext_unsupported);
}

TEST(PacketHeaders, Ipv6FragmentHasNoL4) {
  PacketSpec s;
  s.ipv6 = true;
  s.ipv6_first_next = 44;
  s.ipv6_ext = {6, 0, 0, 0, 0, 0, 0, 1};
  const FrameLayout l = parse(testing::build_frame(s));
  EXPECT_TRUE(l.ip_fragment);
  EXPECT_EQ(l.l4, L4Kind::none);
}

TEST(PacketHeaders, Ipv4Fragments) {
  PacketSpec s;
  s.df = false;
  s.frag = 0x2000;  // MF
  EXPECT_TRUE(parse(testing::build_frame(s)).ip_fragment);
  s.frag = 0x0010;  // offset
  EXPECT_TRUE(parse(testing::build_frame(s)).ip_fragment);
}

TEST(PacketHeaders, EthernetPaddingIsOutsideThePacket) {
  PacketSpec s;
  s.padding = 6;
  const Bytes f = testing::build_frame(s);
  const FrameLayout l = parse(f);
  EXPECT_EQ(l.frame_len, f.size());
  EXPECT_EQ(l.packet_end, f.size() - 6);
  EXPECT_EQ(l.payload_len(), 0u);
}

TEST(PacketHeaders, BadLengthsAndVersions) {
  PacketSpec s;
  s.payload = testing::pattern(20);
  Bytes f = testing::build_frame(s);
  Bytes g = f;
  g[14 + 2] = 0x10;  // total length 4096 > frame
  parse(g, ParseError::bad_ip_length);
  g = f;
  g[14 + 3] = 19;  // total length below the header
  g[14 + 2] = 0;
  parse(g, ParseError::bad_ip_length);
  g = f;
  g[14] = 0x44;  // IHL 4
  parse(g, ParseError::bad_ip_header);
  g = f;
  g[14] = 0x65;  // version 6 under EtherType IPv4
  parse(g, ParseError::bad_ip_header);
  g = f;
  g[34 + 12] = 0x40;  // TCP data offset 4
  parse(g, ParseError::bad_tcp_header);
  g = f;
  g[34 + 12] = 0xf0;  // data offset 15: 60 bytes, past the packet
  parse(g, ParseError::truncated_l4);
}

// Every prefix of a frame shorter than its headers fails, and the parser
// reads nothing past the bytes it is given (each prefix is its own heap
// block, so AddressSanitizer would see it).
TEST(PacketHeaders, EveryTruncationFails) {
  PacketSpec s;
  s.vlan_tpid = 0x8100;
  s.ipv4_options = {1, 1, 1, 0};
  s.tcp_options = testing::timestamp_option(5, 6);
  const Bytes f = testing::build_frame(s);
  const FrameLayout full = parse(f);
  for (std::uint32_t n = 0; n < full.header_len(); ++n) {
    auto copy = std::make_unique<std::uint8_t[]>(n ? n : 1);
    std::copy(f.begin(), f.begin() + n, copy.get());
    FrameLayout l;
    EXPECT_NE(parse_headers(copy.get(), n, n, l), ParseError::none) << n;
  }
}

TEST(PacketHeaders, HeadShorterThanTheHeaders) {
  PacketSpec s;
  s.payload = testing::pattern(100);
  const Bytes f = testing::build_frame(s);
  FrameLayout l;
  EXPECT_EQ(parse_headers(f.data(), 40, static_cast<std::uint32_t>(f.size()), l),
            ParseError::headers_too_long);
}

TEST(PacketHeaders, ScatteredHeaderBytes) {
  PacketSpec s;
  s.ipv6 = true;
  s.tcp_options = testing::timestamp_option(5, 6);
  s.payload = testing::pattern(300);
  const Bytes f = testing::build_frame(s);
  std::vector<ByteSpan> spans;
  for (std::size_t i = 0; i < f.size(); ++i) spans.push_back({&f[i], 1});
  const ByteSpans frame(spans.data(), static_cast<std::uint32_t>(spans.size()));
  const HeaderBytes head(frame);
  EXPECT_EQ(head.len(), kMaxHeaderBytes);
  FrameLayout l;
  ASSERT_EQ(parse_headers(head, frame.len, l), ParseError::none);
  const FrameLayout ref = parse(f);
  EXPECT_EQ(l.l4_offset, ref.l4_offset);
  EXPECT_EQ(l.header_len(), ref.header_len());
  EXPECT_EQ(l.packet_end, ref.packet_end);
}

TEST(PacketHeaders, NonIpFrames) {
  Bytes arp(42, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  const FrameLayout l = parse(arp);
  EXPECT_EQ(l.l3, L3Kind::none);
  EXPECT_EQ(l.l4_offset, 14);
  EXPECT_EQ(l.packet_end, 42u);
  parse(Bytes(13, 0), ParseError::truncated_ethernet);
  Bytes tagged(16, 0);
  tagged[12] = 0x81;
  parse(tagged, ParseError::truncated_ethernet);
}

TEST(PacketHeaders, ErrorNames) {
  EXPECT_STREQ(parse_error_name(ParseError::truncated_l4), "truncated_l4");
  EXPECT_STREQ(parse_error_name(ParseError::none), "none");
}

}  // namespace
}  // namespace xdpvhost::net

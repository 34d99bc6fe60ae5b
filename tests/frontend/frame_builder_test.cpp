// Frame builders and checksum helpers, against known checksum values.

#include <gtest/gtest.h>

#include <vector>

#include "frontend/frame_builder.hpp"
#include "frontend/frame_checksum.hpp"

namespace xdpvhost::testing {
namespace {

TEST(FrontendChecksum, Rfc1071Example) {
  // RFC 1071, 3: 0001 f203 f4f5 f6f7 sums to 2ddf0, folds to ddf2; the
  // checksum is its complement, 220d.
  const std::vector<std::uint8_t> data{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(checksum_finish(checksum_partial(data)), 0x220d);
  EXPECT_EQ(internet_checksum(data), 0x220d);
}

TEST(FrontendChecksum, KnownIpv4Header) {
  // A textbook header whose checksum field is b861.
  std::vector<std::uint8_t> h{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                              0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(internet_checksum(h), 0);
  h[10] = h[11] = 0;
  EXPECT_EQ(internet_checksum(h), 0xb861);
}

TEST(FrontendFrameBuilder, UdpFrameIsWellFormed) {
  UdpFrameSpec spec;
  spec.dst_mac = make_mac(2);
  spec.src_mac = make_mac(1);
  spec.src_port = 4000;
  spec.dst_port = 5000;
  spec.payload = payload_pattern(101, 1);  // odd length
  const auto f = build_udp(spec);
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 101);
  EXPECT_EQ(frame_dst_mac(f), make_mac(2));
  EXPECT_EQ(frame_src_mac(f), make_mac(1));
  EXPECT_EQ(frame_ethertype(f), kEtherTypeIpv4);
  EXPECT_EQ(f[23], 17);
  const auto report = verify_checksums(f);
  EXPECT_TRUE(report.ok()) << report.problem;
  EXPECT_TRUE(report.is_ipv4);
  EXPECT_TRUE(report.ipv4_header_ok);
  EXPECT_TRUE(report.l4_ok);
  EXPECT_FALSE(report.udp_checksum_absent);

  auto broken = f;
  broken.back() ^= 0x01;
  EXPECT_FALSE(verify_checksums(broken).ok());
  broken = f;
  broken[14 + 8] ^= 0x01;  // TTL: IPv4 header checksum
  EXPECT_FALSE(verify_checksums(broken).ipv4_header_ok);

  spec.udp_checksum = false;
  const auto no_sum = build_udp(spec);
  EXPECT_TRUE(verify_checksums(no_sum).ok());
  EXPECT_TRUE(verify_checksums(no_sum).udp_checksum_absent);
}

TEST(FrontendFrameBuilder, TcpIcmpArpFrames) {
  TcpFrameSpec tcp;
  tcp.payload = payload_pattern(333, 2);
  const auto t = build_tcp(tcp);
  EXPECT_TRUE(verify_checksums(t).ok());
  EXPECT_EQ(verify_checksums(t).l4_protocol, 6);

  IcmpEchoSpec icmp;
  icmp.payload = payload_pattern(56, 3);
  const auto i = build_icmp_echo(icmp);
  EXPECT_TRUE(verify_checksums(i).ok());
  EXPECT_EQ(verify_checksums(i).l4_protocol, 1);
  auto bad = i;
  bad.back() ^= 0xff;
  EXPECT_FALSE(verify_checksums(bad).ok());

  ArpSpec arp;
  arp.sender_mac = make_mac(7);
  arp.sender_ip = {10, 0, 0, 7};
  arp.target_ip = {10, 0, 0, 8};
  const auto a = build_arp(arp);
  EXPECT_EQ(a.size(), 42u);
  EXPECT_EQ(frame_ethertype(a), kEtherTypeArp);
  EXPECT_EQ(frame_dst_mac(a), kBroadcastMac);
  EXPECT_TRUE(verify_checksums(a).ok());
  EXPECT_FALSE(verify_checksums(a).is_ipv4);
}

TEST(FrontendFrameBuilder, VlanTaggedFrameStillVerifies) {
  UdpFrameSpec spec;
  spec.payload = payload_pattern(50, 4);
  const auto tagged = add_vlan_tag(build_udp(spec), 100, 3);
  EXPECT_EQ(frame_ethertype(tagged), kEtherTypeVlan);
  EXPECT_EQ(tagged[14], (3 << 5) | 0);
  EXPECT_EQ(tagged[15], 100);
  EXPECT_TRUE(verify_checksums(tagged).ok());
  EXPECT_TRUE(verify_checksums(tagged).is_ipv4);
}

TEST(FrontendFrameBuilder, PartialChecksumRoundTrip) {
  for (bool use_tcp : {false, true}) {
    std::vector<std::uint8_t> frame;
    if (use_tcp) {
      TcpFrameSpec s;
      s.payload = payload_pattern(777, 5);
      frame = build_tcp(s);
    } else {
      UdpFrameSpec s;
      s.payload = payload_pattern(777, 5);
      frame = build_udp(s);
    }
    auto partial = frame;
    const auto header = make_checksum_partial(partial);
    ASSERT_TRUE(header.has_value());
    EXPECT_EQ(header->flags, virtio::NetHeader::kFlagNeedsCsum);
    EXPECT_EQ(header->csum_start, 34);
    EXPECT_EQ(header->csum_offset, use_tcp ? 16 : 6);
    EXPECT_NE(partial, frame);
    EXPECT_FALSE(verify_checksums(partial).ok());  // what a guest would drop
    ASSERT_TRUE(complete_partial_checksum(partial, header->csum_start, header->csum_offset));
    EXPECT_EQ(partial, frame);
  }
  IcmpEchoSpec icmp;
  auto i = build_icmp_echo(icmp);
  EXPECT_FALSE(make_checksum_partial(i).has_value());
  std::vector<std::uint8_t> tiny(20, 0);
  EXPECT_FALSE(complete_partial_checksum(tiny, 18, 6));
}

TEST(FrontendFrameBuilder, SwapMacsAndPatterns) {
  UdpFrameSpec spec;
  spec.dst_mac = make_mac(0x1234);
  spec.src_mac = make_mac(0x5678);
  const auto f = build_udp(spec);
  const auto s = swap_macs(f);
  EXPECT_EQ(frame_dst_mac(s), make_mac(0x5678));
  EXPECT_EQ(frame_src_mac(s), make_mac(0x1234));
  EXPECT_EQ(swap_macs(s), f);
  EXPECT_EQ(payload_pattern(64, 1), payload_pattern(64, 1));
  EXPECT_NE(payload_pattern(64, 1), payload_pattern(64, 2));
}

}  // namespace
}  // namespace xdpvhost::testing

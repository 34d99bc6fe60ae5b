#include "net/guest_forward.hpp"

#include <gtest/gtest.h>

#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::Bytes;
using testing::PacketSpec;

struct Validated {
  Bytes frame;
  ByteSpan span;
  ValidatedOffload offload;
};

Validated tso(PacketSpec s, std::uint32_t payload, bool needs_csum = true, bool ecn = false) {
  s.csum = needs_csum ? testing::L4Checksum::partial : testing::L4Checksum::full;
  s.payload = testing::pattern(payload);
  Validated v{testing::build_frame(s), {}, {}};
  v.span = {v.frame.data(), static_cast<std::uint32_t>(v.frame.size())};
  const testing::RefLayout l = testing::ref_layout(v.frame);
  OffloadRequest r;
  r.gso = {s.ipv6 ? GsoType::tcpv6 : GsoType::tcpv4, ecn,
           static_cast<std::uint16_t>(s.ipv6 ? 1428 : 1448), 0};
  if (needs_csum) r.csum = {true, static_cast<std::uint16_t>(l.l4), 16};
  const OffloadCheck c = validate_offload(ByteSpans(v.span), r, {});
  EXPECT_TRUE(c.ok()) << counter_name(c.error);
  v.offload = c.offload;
  return v;
}

constexpr GuestOffloads kTsoGuest{true, true, true, true, false};

TEST(GuestForward, TsoFrameGoesThroughUnchanged) {
  PacketSpec s;
  s.tcp_options = testing::timestamp_option(1, 2);
  const Validated v = tso(s, 20000);
  const GuestForward fw = plan_guest_forward(ByteSpans(v.span), v.offload, kTsoGuest);
  EXPECT_FALSE(fw.segment);
  EXPECT_FALSE(fw.patch);
  EXPECT_EQ(fw.frame_len, v.frame.size());
  EXPECT_EQ(fw.header.gso_type, kVirtioGsoTcpv4);
  EXPECT_EQ(fw.header.gso_size, 1448);
  EXPECT_EQ(fw.header.hdr_len, 66);  // the parsed headers, not the sender's hint
  EXPECT_EQ(fw.header.flags, kVirtioNetNeedsCsum);
  EXPECT_EQ(fw.header.csum_start, 34);
  EXPECT_EQ(fw.header.csum_offset, 16);
}

TEST(GuestForward, GuestWithoutTsoGetsSegments) {
  PacketSpec s;
  s.ipv6 = true;
  const Validated v = tso(s, 5000);
  GuestOffloads no_tso6 = kTsoGuest;
  no_tso6.tso6 = false;
  EXPECT_TRUE(plan_guest_forward(ByteSpans(v.span), v.offload, no_tso6).segment);
  EXPECT_FALSE(plan_guest_forward(ByteSpans(v.span), v.offload, kTsoGuest).segment);
  GuestOffloads no_csum = kTsoGuest;
  no_csum.csum = false;  // GUEST_TSO needs GUEST_CSUM
  EXPECT_TRUE(plan_guest_forward(ByteSpans(v.span), v.offload, no_csum).segment);
}

TEST(GuestForward, EcnNeedsGuestEcn) {
  PacketSpec s;
  s.flags = 0x90;
  const Validated v = tso(s, 5000, true, true);
  GuestOffloads no_ecn = kTsoGuest;
  no_ecn.ecn = false;
  EXPECT_TRUE(plan_guest_forward(ByteSpans(v.span), v.offload, no_ecn).segment);
  const GuestForward fw = plan_guest_forward(ByteSpans(v.span), v.offload, kTsoGuest);
  EXPECT_FALSE(fw.segment);
  EXPECT_EQ(fw.header.gso_type, kVirtioGsoTcpv4 | kVirtioGsoEcn);
}

TEST(GuestForward, TsoWithoutNeedsCsumGetsThePseudoHeaderSum) {
  PacketSpec s;
  const Validated v = tso(s, 9000, false);
  const GuestForward fw = plan_guest_forward(ByteSpans(v.span), v.offload, kTsoGuest);
  ASSERT_FALSE(fw.segment);
  ASSERT_TRUE(fw.patch);
  EXPECT_EQ(fw.patch_offset, 34 + 16);
  EXPECT_EQ(fw.header.flags, kVirtioNetNeedsCsum);
  Bytes copy = v.frame;
  testing::put_be16(&copy[fw.patch_offset], fw.patch_value);
  EXPECT_EQ(fw.patch_value, testing::ref_partial_value(copy));
  testing::ref_complete(copy, fw.header.csum_start, fw.header.csum_offset);
  EXPECT_TRUE(testing::ref_l4_checksum_ok(copy));
}

TEST(GuestForward, OneSegmentGsoGoesAsAChecksumOnlyFrame) {
  PacketSpec s;
  const Validated v = tso(s, 1000);
  GuestOffloads csum_only;
  csum_only.csum = true;
  const GuestForward fw = plan_guest_forward(ByteSpans(v.span), v.offload, csum_only);
  EXPECT_FALSE(fw.segment);
  EXPECT_EQ(fw.header.gso_type, kVirtioGsoNone);
  EXPECT_EQ(fw.header.flags, kVirtioNetNeedsCsum);
  EXPECT_TRUE(plan_guest_forward(ByteSpans(v.span), v.offload, GuestOffloads{}).segment);
}

TEST(GuestForward, PlainFramesAndChecksumOnly) {
  PacketSpec s;
  s.payload = testing::pattern(100);
  const Bytes f = testing::build_frame(s);
  const ByteSpan span{f.data(), static_cast<std::uint32_t>(f.size())};
  const GuestForward plain = plan_guest_forward(ByteSpans(span), ValidatedOffload{}, {});
  EXPECT_FALSE(plain.segment);
  EXPECT_EQ(plain.header.flags, 0);
  EXPECT_EQ(plain.frame_len, f.size());

  OffloadRequest r;
  r.csum = {true, 34, 16};
  const OffloadCheck c = validate_offload(ByteSpans(span), r, {});
  ASSERT_TRUE(c.ok());
  GuestOffloads csum;
  csum.csum = true;
  const GuestForward fw = plan_guest_forward(ByteSpans(span), c.offload, csum);
  EXPECT_FALSE(fw.segment);
  EXPECT_EQ(fw.header.csum_start, 34);
  EXPECT_TRUE(plan_guest_forward(ByteSpans(span), c.offload, GuestOffloads{}).segment);
}

}  // namespace
}  // namespace xdpvhost::net

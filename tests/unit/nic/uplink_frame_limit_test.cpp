// The longest frame an uplink carries, from the facts about kernel, driver
// and socket, and the reason it names; the kernel version parser.
#include "nic/uplink_frame_limit.hpp"

#include <gtest/gtest.h>

#include "net/ethernet.hpp"

namespace xdpvhost::nic {
namespace {

UplinkFrameFacts veth_copy_mode() {
  UplinkFrameFacts f;
  f.frame_size = 2048;
  f.kernel = {6, 18};
  f.ifname = "eth1";
  f.driver = "veth";
  f.zero_copy = false;
  return f;
}

bool says(const UplinkFrameLimit& limit, const std::string& text) {
  return limit.reason.find(text) != std::string::npos;
}

TEST(KernelVersion, ParsesReleases) {
  EXPECT_EQ(KernelVersion::parse("6.18.44-fc-v669"), (KernelVersion{6, 18}));
  EXPECT_EQ(KernelVersion::parse("6.1.0-27-amd64"), (KernelVersion{6, 1}));
  EXPECT_EQ(KernelVersion::parse("5.4"), (KernelVersion{5, 4}));
  EXPECT_FALSE(KernelVersion::parse(""));
  EXPECT_FALSE(KernelVersion::parse("6"));
  EXPECT_FALSE(KernelVersion::parse("linux"));
  EXPECT_LT((KernelVersion{6, 1}), kMultiBufferKernel);
  EXPECT_LT((KernelVersion{5, 19}), kMultiBufferKernel);
  EXPECT_GE((KernelVersion{6, 6}), kMultiBufferKernel);
  EXPECT_GE((KernelVersion{7, 0}), kMultiBufferKernel);
  EXPECT_EQ((KernelVersion{6, 18}).to_string(), "6.18");
  EXPECT_EQ(KernelVersion{}.to_string(), "unknown");
  EXPECT_TRUE(KernelVersion::running().known());
}

TEST(UplinkFrameLimit, CopyModeMultiBufferIsBoundByTheTxDescriptorLimit) {
  const UplinkFrameLimit limit = uplink_frame_limit(veth_copy_mode());
  EXPECT_EQ(limit.max_frame, 18u * 2048);  // 36864
  EXPECT_EQ(limit.single_buffer, 1792u);
  EXPECT_TRUE(limit.multi_buffer);
  EXPECT_TRUE(limit.fits(net::max_frame_for_mtu(9000)));
  EXPECT_TRUE(says(limit, "eth1 (veth) in copy mode: copy-mode TX")) << limit.reason;
  EXPECT_TRUE(says(limit, "18 descriptors of 2048 bytes")) << limit.reason;
}

TEST(UplinkFrameLimit, FourKiBFramesReachTheLargestMtu) {
  UplinkFrameFacts f = veth_copy_mode();
  f.frame_size = 4096;
  const UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, net::max_frame_for_mtu(65535));
  EXPECT_EQ(limit.single_buffer, 3840u);
  EXPECT_TRUE(says(limit, "largest MTU")) << limit.reason;
}

TEST(UplinkFrameLimit, AnOldKernelHoldsOneFrame) {
  UplinkFrameFacts f = veth_copy_mode();
  f.kernel = {6, 1};
  const UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 1792u);
  EXPECT_FALSE(limit.multi_buffer);
  EXPECT_FALSE(limit.fits(9018));
  EXPECT_TRUE(says(
      limit, "eth1 (veth) in copy mode: multi-buffer AF_XDP needs kernel >= 6.6 (running 6.1)"))
      << limit.reason;
  EXPECT_TRUE(says(limit, "one 2048-byte UMEM frame holds 1792 bytes after 256 of XDP headroom"))
      << limit.reason;
}

TEST(UplinkFrameLimit, UnknownFactsAssumeMultiBuffer) {
  UplinkFrameFacts f;
  const UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 18u * 2048);
  EXPECT_TRUE(says(limit, "uplink: ")) << limit.reason;
}

TEST(UplinkFrameLimit, ASocketWithoutMultiBufferHoldsOneFrame) {
  UplinkFrameFacts f = veth_copy_mode();
  f.socket_multi_buffer = false;
  const UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 1792u);
  EXPECT_TRUE(says(limit, "without multi-buffer (XDP_USE_SG)")) << limit.reason;
}

TEST(UplinkFrameLimit, TheInterfaceMtuBoundsIt) {
  UplinkFrameFacts f = veth_copy_mode();
  f.interface_mtu = 9000;
  UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 9018u);
  EXPECT_TRUE(limit.multi_buffer);
  EXPECT_TRUE(says(limit, "interface MTU 9000")) << limit.reason;
  f.interface_mtu = 1500;
  limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 1518u);
  EXPECT_FALSE(limit.multi_buffer);  // 1518 fits one frame
}

TEST(UplinkFrameLimit, NativeXdpWithAPlainProgramSeesOnePage) {
  UplinkFrameFacts f = veth_copy_mode();
  f.xdp_mode = XdpMode::kNative;
  f.program_frags = false;
  UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 3520u);
  EXPECT_TRUE(says(limit, "without a frags-aware program")) << limit.reason;
  EXPECT_TRUE(says(limit, "veth caps its peer's MTU at 3506")) << limit.reason;
  // skb mode linearizes or copies: no page bound.
  f.xdp_mode = XdpMode::kSkb;
  limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 18u * 2048);
}

TEST(UplinkFrameLimit, ADriverWithoutRxSgSeesOnePageInNativeMode) {
  UplinkFrameFacts f = veth_copy_mode();
  f.driver = "foo";
  f.xdp_features = XdpFeatures{kXdpActBasic | kXdpActRedirect, 0};
  UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 3520u);
  EXPECT_TRUE(says(limit, "no rx-sg among its XDP features: basic redirect")) << limit.reason;
  f.xdp_features->act |= kXdpActRxSg;
  limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 18u * 2048);
}

TEST(UplinkFrameLimit, ZeroCopyNeedsTheDriversSegmentCount) {
  UplinkFrameFacts f = veth_copy_mode();
  f.driver = "ice";
  f.zero_copy = true;
  f.xdp_features = XdpFeatures{kXdpActBasic | kXdpActXskZeroCopy | kXdpActRxSg, 1};
  UplinkFrameLimit limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 1792u);
  EXPECT_TRUE(says(limit,
                   "eth1 (ice) in zero-copy mode: zero-copy multi-buffer needs driver "
                   "support (NETDEV_A_DEV_XDP_ZC_MAX_SEGS = 1)"))
      << limit.reason;
  f.xdp_features->zc_max_segs = 5;
  limit = uplink_frame_limit(f);
  EXPECT_EQ(limit.max_frame, 5u * 2048);
  EXPECT_TRUE(says(limit, "at most 5 buffers of 2048 bytes")) << limit.reason;
}

TEST(XdpFeatures, NamesTheBits) {
  EXPECT_EQ(to_string(XdpFeatures{}), "none");
  EXPECT_EQ(to_string(XdpFeatures{kXdpActBasic | kXdpActRedirect | kXdpActRxSg, 0}),
            "basic redirect rx-sg");
  EXPECT_EQ(to_string(XdpFeatures{kXdpActXskZeroCopy, 3}), "xsk-zerocopy zc-max-segs=3");
}

}  // namespace
}  // namespace xdpvhost::nic

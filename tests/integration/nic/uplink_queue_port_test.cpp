// An UplinkQueuePort on a real AF_XDP socket (veth, copy mode) sending a
// guest's offloaded frames: with multi-buffer and without it (a kernel
// before 6.6, Debian 12's among them, binds without), a frame whose checksum
// the guest left unfinished, and a TSO frame, leave the uplink complete.

#include "dataplane/uplink_queue_port.hpp"

#include <gtest/gtest.h>
#include <net/ethernet.h>

#include "dataplane/net_test_guest.hpp"
#include "net/offload_validation.hpp"
#include "net/virtio_net_offload.hpp"
#include "netns_fixture.hpp"
#include "xsk_path.hpp"

namespace xdpvhost::xsk::test {
namespace {

using dataplane::DropReason;
using dataplane::Frame;
using dataplane::UplinkQueuePort;

const std::uint8_t kGuestMac[6] = {0x02, 0, 0, 0, 0, 0xaa};

class UplinkQueuePortTest : public NetnsPair, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    NetnsPair::SetUp();
    if (HasFatalFailure()) return;
    in_b([&] { peer_ = std::make_unique<PacketSocket>(kIfB, ETH_P_IP); });
    ASSERT_TRUE(peer_ && peer_->valid());
    const bool multi_buffer = GetParam();
    ASSERT_TRUE(path_.open(kIfA, {}, BindMode::kAuto, {}, multi_buffer)) << path_.error;
    ASSERT_EQ(path_.socket->multi_buffer(), multi_buffer) << path_.socket->bind_report();
    port_ = std::make_unique<UplinkQueuePort>(1, "uplink", 0, UplinkQueuePort::Options{});
    port_->bind(std::move(path_.umem), std::move(path_.socket)).close();
    port_->set_link_up(true);
  }
  void TearDown() override {
    port_.reset();
    peer_.reset();
    path_.close();
    NetnsPair::TearDown();
  }
  // The frame as a guest port hands it on when its guest sent it with
  // `header`: the request decoded and validated against the frame.
  Frame frame_of(const std::vector<std::uint8_t>& bytes, const net::VirtioNetOffload& header,
                 std::uint32_t mtu = 1500) {
    net::OffloadRequest request;
    EXPECT_EQ(net::decode_virtio_offload(header, request), net::OffloadError::none);
    span_ = dataplane::Span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
    net::OffloadPolicy policy;
    policy.mtu = mtu;
    const net::OffloadCheck check =
        net::validate_offload(net::ByteSpans{&span_, 1}, request, policy);
    EXPECT_TRUE(check.ok());
    return Frame(span_, check.offload);
  }
  void send(const std::vector<std::uint8_t>& bytes, const net::VirtioNetOffload& header,
            std::uint32_t mtu = 1500) {
    const Frame frame = frame_of(bytes, header, mtu);
    ASSERT_TRUE(frame.needs_offload());
    port_->deliver(frame);
    port_->end_burst();
  }
  std::uint64_t drops() const {
    std::uint64_t n = 0;
    for (const auto& d : port_->counters().drops) n += d.get();
    return n;
  }

  dataplane::Span span_;  // of the last frame_of()
  XskPath path_;
  std::unique_ptr<PacketSocket> peer_;
  std::unique_ptr<UplinkQueuePort> port_;
};

TEST_P(UplinkQueuePortTest, AFrameWithItsChecksumLeftToTheNicLeavesComplete) {
  const auto sent = dataplane::test::udp_frame(mac_b_.bytes.data(), kGuestMac, 400, true);
  send(sent,
       net::VirtioNetOffload{net::kVirtioNetNeedsCsum, net::kVirtioGsoNone, 0, 0, 14 + 20, 6});
  const auto got = peer_->receive(1, 2000);
  ASSERT_EQ(got.size(), 1u) << "drops " << drops();
  EXPECT_EQ(got[0].size(), sent.size());
  EXPECT_TRUE(dataplane::test::udp_checksum_ok(got[0]));
  EXPECT_EQ(drops(), 0u);
}

TEST_P(UplinkQueuePortTest, ATsoFrameLeavesAsCompleteSegments) {
  const auto sent = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 3 * 1400);
  send(sent, net::VirtioNetOffload{net::kVirtioNetNeedsCsum, net::kVirtioGsoTcpv4, 14 + 20 + 20,
                                   1400, 14 + 20, 16});
  const auto got = peer_->receive(3, 2000);
  ASSERT_EQ(got.size(), 3u) << "drops " << drops();
  for (const auto& segment : got) EXPECT_TRUE(dataplane::test::tcp_checksums_ok(segment));
  EXPECT_EQ(port_->counters().gso_segments.get(), 3u);
  EXPECT_EQ(drops(), 0u);
}

TEST_P(UplinkQueuePortTest, SegmentsLongerThanAUmemFrameNeedMultiBufferOrAreCountedOversize) {
  port_->set_max_frame(9018);  // a jumbo uplink
  const auto sent = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 2 * 3000);
  send(sent,
       net::VirtioNetOffload{net::kVirtioNetNeedsCsum, net::kVirtioGsoTcpv4, 14 + 20 + 20, 3000,
                             14 + 20, 16},
       9000);
  if (GetParam()) {
    EXPECT_EQ(port_->counters().tx_packets.get(), 2u) << "two chains handed to the kernel";
    EXPECT_EQ(port_->counters().drops[static_cast<std::size_t>(DropReason::kOversize)].get(), 0u);
    // This veth's MTU is 1500: it drops them on the way, which is counted.
    EXPECT_GE(port_->counters().drops[static_cast<std::size_t>(DropReason::kUplinkRefused)].get(),
              1u);
  } else {
    EXPECT_EQ(port_->counters().tx_packets.get(), 0u);
    EXPECT_EQ(port_->counters().drops[static_cast<std::size_t>(DropReason::kOversize)].get(), 1u)
        << "a 3054-byte segment does not fit a 2048-byte UMEM frame";
  }
}

// A frame leaves whole or not at all: segments longer than the uplink's frame
// limit drop the frame before any of it is sent, its short last segment too.
TEST_P(UplinkQueuePortTest, AFrameWhoseSegmentsAreTooLongForTheUplinkLeavesNotAtAll) {
  const auto sent = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 2 * 3000 + 500);
  send(sent,
       net::VirtioNetOffload{net::kVirtioNetNeedsCsum, net::kVirtioGsoTcpv4, 14 + 20 + 20, 3000,
                             14 + 20, 16},
       9000);
  EXPECT_EQ(port_->counters().drops[static_cast<std::size_t>(DropReason::kOversize)].get(), 1u);
  EXPECT_EQ(port_->counters().tx_packets.get(), 0u);
  EXPECT_EQ(port_->counters().gso_segments.get(), 0u);
  EXPECT_TRUE(peer_->receive(1, 300).empty()) << "part of the frame left";
  // The queue goes on: a frame that fits leaves.
  const auto fits = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 2 * 1400);
  send(fits, net::VirtioNetOffload{net::kVirtioNetNeedsCsum, net::kVirtioGsoTcpv4, 14 + 20 + 20,
                                   1400, 14 + 20, 16});
  EXPECT_EQ(peer_->receive(2, 2000).size(), 2u);
}

// A guest's transmit queue waits while the uplink has no room for a frame
// (can_accept false): for a frame that could never fit, it would wait forever.
TEST_P(UplinkQueuePortTest, AFrameIsWaitedForOnlyIfItCanEverFit) {
  dataplane::Tunables t;
  t.tx_inflight_max = 4;
  port_->set_tunables(t);
  port_->set_max_frame(9018);  // a jumbo uplink; the guest's segments are 1454 bytes
  const net::VirtioNetOffload tso{
      net::kVirtioNetNeedsCsum, net::kVirtioGsoTcpv4, 14 + 20 + 20, 1400, 14 + 20, 16};
  // Three segments of one UMEM frame each: room for them.
  const auto three = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 3 * 1400);
  EXPECT_TRUE(port_->can_accept(frame_of(three, tso)));
  send(three, tso);
  EXPECT_EQ(peer_->receive(3, 2000).size(), 3u);
  // Five never fit in four: taken, and dropped as oversize.
  const auto five = dataplane::test::tcp_frame(mac_b_.bytes.data(), kGuestMac, 5 * 1400);
  EXPECT_TRUE(port_->can_accept(frame_of(five, tso)));
  send(five, tso);
  EXPECT_EQ(port_->counters().drops[static_cast<std::size_t>(DropReason::kOversize)].get(), 1u);
  EXPECT_EQ(port_->counters().tx_packets.get(), 3u);
}

INSTANTIATE_TEST_SUITE_P(MultiBuffer, UplinkQueuePortTest, ::testing::Bool(), [](const auto& info) {
  return std::string(info.param ? "MultiBuffer" : "SingleBuffer");
});

}  // namespace
}  // namespace xdpvhost::xsk::test

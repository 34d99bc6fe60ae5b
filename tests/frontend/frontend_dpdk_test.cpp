// The test frontend against an independent vhost-user backend: DPDK's
// net_vhost PMD in dpdk-testpmd, forwarding in macswap mode. Proves that the
// frontend negotiates with a real backend (both socket roles), that frames it
// sends arrive and come back with the MACs exchanged, and that stop/reboot
// work. Label: dpdk.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "frontend/frame_builder.hpp"
#include "frontend/frame_checksum.hpp"
#include "frontend/frontend.hpp"
#include "frontend/testpmd_process.hpp"

namespace xdpvhost::testing {
namespace {

using namespace std::chrono_literals;
using virtio::Feature;

const std::string kDir = "/tmp/xdpvhost-frontend-test";

class FrontendDpdk : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(kDir); }

  // Starts testpmd with one vhost port on `socket` (client=1: it connects to us).
  void start_testpmd(const std::string& name, const std::string& socket, bool client) {
    if (!client) std::filesystem::remove(socket);  // a stale one would stop testpmd's bind
    std::string vdev = "net_vhost0,iface=" + socket + ",queues=1";
    if (client) vdev += ",client=1";
    log_path_ = kDir + "/testpmd-" + name + ".log";
    testpmd_ = std::make_unique<TestpmdProcess>(
        std::vector<std::string>{"dpdk-testpmd", "-l", "0-1", "--no-pci", "--no-huge", "-m", "256",
                                 "--file-prefix=frontendtest-" + name, "--vdev", vdev, "--",
                                 "--forward-mode=macswap", "--auto-start", "--nb-cores=1",
                                 "--total-num-mbufs=4096", "--disable-link-check"},
        log_path_);
  }

  void TearDown() override {
    if (testpmd_) {
      testpmd_->stop();
      if (HasFailure()) {
        std::cerr << "---- testpmd log (" << log_path_ << ")\n" << testpmd_->log();
      } else {
        std::filesystem::remove(log_path_);
      }
    }
  }

  std::unique_ptr<TestpmdProcess> testpmd_;
  std::string log_path_;
};

std::vector<std::uint8_t> frame_for(std::uint32_t i) {
  UdpFrameSpec spec;
  spec.dst_mac = make_mac(0x0200);
  spec.src_mac = make_mac(0x0100);
  spec.src_port = static_cast<std::uint16_t>(1000 + i);
  spec.payload = payload_pattern(18 + (i * 97) % 1400, i);
  return build_udp(spec);
}

TxOptions tx_layout(std::uint32_t i, bool indirect_ok) {
  static constexpr ChainLayout kLayouts[] = {ChainLayout::kSingle, ChainLayout::kHeaderSeparate,
                                             ChainLayout::kScattered, ChainLayout::kHeaderSplit};
  TxOptions o;
  o.layout = kLayouts[i % 4];
  o.indirect = indirect_ok && (i / 4) % 2 == 1;
  o.chunk = 200;
  return o;
}

// Sends `count` frames in every chain layout, receives them back and checks
// each is the one sent with the MACs exchanged, in order.
void exchange(Frontend& fe, std::uint32_t count, std::uint32_t first_id) {
  const bool indirect = virtio::has(fe.acked_features(), Feature::kRingIndirectDesc);
  std::vector<std::vector<std::uint8_t>> sent;
  for (std::uint32_t i = 0; i < count; ++i) {
    sent.push_back(frame_for(first_id + i));
    ASSERT_TRUE(fe.send_frame(sent.back(), std::nullopt, tx_layout(i, indirect)))
        << fe.net().last_error();
  }
  auto frames = fe.receive_frames(20s, count);
  ASSERT_EQ(frames.size(), count) << "rx errors " << fe.net().stats().rx_errors << " "
                                  << fe.net().last_error();
  for (std::uint32_t i = 0; i < count; ++i) {
    EXPECT_EQ(frames[i].bytes, swap_macs(sent[i])) << "frame " << i;
    EXPECT_TRUE(verify_checksums(frames[i].bytes).ok()) << "frame " << i;
    EXPECT_EQ(frames[i].header.flags, 0) << "frame " << i;
  }
  EXPECT_EQ(fe.net().stats().rx_errors, 0u) << fe.net().last_error();
  EXPECT_TRUE(fe.net().wait_tx_complete(5s));
  EXPECT_EQ(fe.rx_queue().device_errors(), 0u);
  EXPECT_EQ(fe.tx_queue().device_errors(), 0u);
}

TEST_F(FrontendDpdk, ClientRoleExchangesFramesAndSurvivesReboot) {
  const std::string socket = kDir + "/vhost.sock";
  start_testpmd("client", socket, /*client=*/false);
  Frontend fe(FrontendOptions{.socket_path = socket, .role = Role::kClient, .timeout = 30s});
  ASSERT_TRUE(fe.connect()) << fe.last_error();
  ASSERT_TRUE(fe.negotiate()) << fe.last_error();

  // DPDK offers what a Linux guest takes from it.
  EXPECT_TRUE(virtio::has(fe.acked_features(), Feature::kVersion1));
  EXPECT_TRUE(virtio::has(fe.acked_features(), Feature::kNetMrgRxbuf));
  EXPECT_TRUE(virtio::has(fe.acked_features(), Feature::kRingEventIdx));
  EXPECT_TRUE(virtio::has(fe.acked_features(), Feature::kVhostUserProtocolFeatures));
  EXPECT_TRUE(
      vhost_user::has(fe.acked_protocol_features(), vhost_user::ProtocolFeature::kReplyAck));
  EXPECT_EQ(fe.acked_features() & ~fe.offered_features(), 0u);

  ASSERT_EQ(fe.post_rx_buffers(128, 2048), 128u);
  exchange(fe, 64, 0);
  // DPDK signalled the call eventfd it was given last, never the placeholder.
  fe.rx_queue().drain_interrupts();
  EXPECT_GE(fe.net().rx_interrupts(), 1u);
  EXPECT_EQ(fe.stale_call_signals(), 0u);
  EXPECT_GE(fe.tx_queue().kicks_sent(), 1u);

  // Power-off: DPDK reports how far it got on each ring.
  auto bases = fe.stop();
  ASSERT_TRUE(bases.has_value()) << fe.last_error();
  EXPECT_EQ((*bases)[1], 64);                        // every TX chain taken
  EXPECT_EQ((*bases)[0], fe.rx_queue().used_idx());  // RX chains filled

  // Reboot into a driver without mergeable buffers, EVENT_IDX or indirect.
  NegotiateOptions plain;
  plain.mrg_rxbuf = false;
  plain.event_idx = false;
  plain.indirect = false;
  ASSERT_TRUE(fe.reset_and_renegotiate(plain)) << fe.last_error();
  EXPECT_FALSE(virtio::has(fe.acked_features(), Feature::kNetMrgRxbuf));
  ASSERT_EQ(fe.post_rx_buffers(64, 1600), 64u);
  exchange(fe, 32, 1000);
  for (const auto& f : fe.net().poll_frames()) ADD_FAILURE() << "extra frame " << f.bytes.size();
  fe.disconnect();
}

TEST_F(FrontendDpdk, ServerRoleTwoRegionsMergesSmallBuffers) {
  const std::string socket = kDir + "/vhost-server.sock";
  Frontend fe(FrontendOptions{.socket_path = socket,
                              .role = Role::kServer,
                              .memory = ArenaOptions{.size = 64u << 20, .two_regions = true},
                              .timeout = 30s});
  fe.listen();  // before testpmd, which connects to us (client=1)
  start_testpmd("server", socket, /*client=*/true);
  ASSERT_TRUE(fe.connect()) << fe.last_error();
  NegotiateOptions opts;
  opts.queue_size = 512;
  opts.event_idx = false;
  opts.ack_all = true;  // DPDK must acknowledge every request
  ASSERT_TRUE(fe.negotiate(opts)) << fe.last_error();
  EXPECT_TRUE(fe.channel().reply_ack());

  // 600-byte RX chains: frames above ~590 bytes need two or three of them.
  ASSERT_EQ(fe.post_rx_buffers(256, 600), 256u);
  exchange(fe, 48, 2000);
  EXPECT_GT(fe.net().stats().rx_buffers, fe.net().stats().rx_frames);
  EXPECT_EQ(fe.stale_call_signals(), 0u);

  auto bases = fe.stop();
  ASSERT_TRUE(bases.has_value()) << fe.last_error();
  EXPECT_EQ((*bases)[1], 48);
  EXPECT_EQ((*bases)[0], fe.rx_queue().used_idx());
  fe.disconnect();
}

}  // namespace
}  // namespace xdpvhost::testing

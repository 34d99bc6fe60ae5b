// Jumbo frames through the uplink with the default 2048-byte UMEM frames:
// the frags-aware XDP program on veth, AF_XDP multi-buffer (XDP_USE_SG) in
// copy mode, RX packets as descriptor chains, TX packets of several
// descriptors, the kernel's limits and counters, and the frame limit the
// uplink reports. Every number the READMEs give under "Facts measured on
// this machine" for multi-buffer is checked here.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "netns_fixture.hpp"
#include "nic/uplink_frame_limit.hpp"
#include "xsk/descriptor_chain.hpp"
#include "xsk/frame_room.hpp"
#include "xsk_path.hpp"

namespace xdpvhost::xsk::test {
namespace {

const MacAddress kGuest = {0x02, 0x00, 0x00, 0x00, 0x00, 0xaa};
constexpr std::uint32_t kRoom = 2048 - kXdpPacketHeadroom;  // 1792 per RX descriptor

class MultiBufferTest : public NetnsPair {
 protected:
  void SetUp() override {
    NetnsPair::SetUp();
    if (HasFatalFailure()) return;
    in_b([&] { peer_ = std::make_unique<PacketSocket>(kIfB, kTestEtherType); });
    ASSERT_TRUE(peer_ && peer_->valid());
  }
  void TearDown() override {
    peer_.reset();
    path_.close();
    NetnsPair::TearDown();
  }

  void set_mtu(bool on_a, std::uint32_t mtu) {
    std::string out;
    const std::string cmd =
        std::string("ip link set ") + (on_a ? kIfA : kIfB) + " mtu " + std::to_string(mtu);
    ASSERT_EQ(on_a ? run_in_a(cmd, &out) : run_in_b(cmd, &out), 0) << cmd << ": " << out;
  }
  // Both ends of the veth pair.
  void set_mtus(std::uint32_t mtu) {
    set_mtu(true, mtu);
    set_mtu(false, mtu);
  }
  std::uint32_t peer_max_mtu() {
    std::string out;
    run_in_b(std::string("ip -d link show ") + kIfB, &out);
    const std::size_t at = out.find("maxmtu ");
    return at == std::string::npos ? 0 : static_cast<std::uint32_t>(std::stoul(out.substr(at + 7)));
  }

  // The program (frags-aware unless told otherwise) and a socket with
  // multi-buffer on queue 0, default 2048-byte frames.
  void open_path(bool multi_buffer = true, XdpProgramOptions options = {}) {
    ASSERT_TRUE(path_.open(kIfA, options, BindMode::kAuto, {}, multi_buffer)) << path_.error;
    ASSERT_EQ(path_.program->add_guest_mac(kGuest), 0);
  }

  // A frame of exactly `len` bytes to the guest (Ethernet header included).
  std::vector<std::uint8_t> guest_frame(std::uint32_t seq, std::size_t len) {
    return make_frame(kGuest, mac_b_, seq, len - 14);
  }

  XdpSteerStats stats() {
    XdpSteerStats s;
    EXPECT_EQ(path_.program->read_stats(s), 0);
    return s;
  }
  XskStatistics xsk_stats() {
    XskStatistics s;
    EXPECT_EQ(path_.socket->read_statistics(s), 0);
    return s;
  }

  // Every UMEM frame is back in the pool or on the fill ring.
  void expect_no_frame_lost() {
    EXPECT_EQ(path_.umem->frames().available() + path_.umem->fill_level(),
              path_.umem->config().frame_count);
  }

  // Writes `frame` into UMEM frames of frame_size bytes each and puts it on
  // the TX ring as one packet. Returns the descriptors used (0: refused).
  std::uint32_t send_packet(const std::vector<std::uint8_t>& frame) {
    const std::uint32_t frame_size = path_.umem->config().frame_size;
    const std::uint32_t len = static_cast<std::uint32_t>(frame.size());
    const std::uint32_t count = descriptors_for(len, frame_size);
    std::uint32_t idx = 0;
    if (path_.socket->tx_reserve_packet(count, idx) != count) return 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t addr = path_.umem->frames().alloc();
      EXPECT_NE(addr, FramePool::kInvalid);
      const std::uint32_t off = i * frame_size;
      const std::uint32_t chunk = std::min(frame_size, len - off);
      std::memcpy(path_.umem->data(addr), frame.data() + off, chunk);
      path_.socket->tx_packet_desc(idx, i, count, addr, chunk);
    }
    path_.socket->tx_submit(count);
    return count;
  }
  // Kicks until the TX ring is empty (bounded), then reclaims completions.
  void kick_until_sent() {
    for (int i = 0; i < 20 && path_.socket->tx_pending() != 0; ++i) (void)path_.socket->kick_tx();
    EXPECT_EQ(path_.socket->tx_pending(), 0u);
  }
  std::uint32_t reclaim(std::uint32_t want) {
    std::uint32_t got = 0;
    for (int i = 0; i < 100 && got < want; ++i) {
      got += path_.umem->reclaim_completions(64);
      if (got < want) ::poll(nullptr, 0, 5);
    }
    return got;
  }

  std::unique_ptr<PacketSocket> peer_;
  XskPath path_;
};

TEST_F(MultiBufferTest, FragsProgramReportsItselfAndLetsThePeerMtuGrow) {
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_EQ(prog->mode(), XdpMode::kNative);
  EXPECT_TRUE(prog->frags());
  EXPECT_NE(prog->attach_report().find(", frags"), std::string::npos) << prog->attach_report();
  std::printf("attach report: %s\n", prog->attach_report().c_str());
  // veth lifts its peer's MTU cap only for a frags-aware program.
  const std::uint32_t frags_max = peer_max_mtu();
  EXPECT_GT(frags_max, 9000u);
  set_mtu(false, 9000);
  set_mtu(false, 1500);
  prog.reset();

  XdpProgramOptions plain;
  plain.frags = false;
  prog = XdpProgram::attach(kIfA, plain, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_FALSE(prog->frags());
  EXPECT_EQ(prog->attach_report().find("frags"), std::string::npos) << prog->attach_report();
  const std::uint32_t plain_max = peer_max_mtu();
  EXPECT_EQ(plain_max, 4096u - 256 - 320 - 14);  // one page of XDP: 3506
  std::string out;
  EXPECT_NE(run_in_b(std::string("ip link set ") + kIfB + " mtu 9000", &out), 0);
  std::printf("peer maxmtu: frags %u, plain %u\n", frags_max, plain_max);
}

TEST_F(MultiBufferTest, PlainNativeProgramIsRefusedWhileThePeerMtuIsJumbo) {
  set_mtus(9000);
  std::string error;
  XdpProgramOptions options;
  options.mode = XdpModeRequest::kNative;
  options.frags = false;
  EXPECT_FALSE(XdpProgram::attach(kIfA, options, error));
  EXPECT_NE(error.find(std::strerror(ERANGE)), std::string::npos) << error;
  // auto falls back to skb mode for the plain program...
  options.mode = XdpModeRequest::kAuto;
  auto prog = XdpProgram::attach(kIfA, options, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_EQ(prog->mode(), XdpMode::kSkb);
  EXPECT_NE(prog->attach_report().find("native refused"), std::string::npos)
      << prog->attach_report();
  prog.reset();
  // ... and the frags-aware one attaches natively.
  prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_EQ(prog->mode(), XdpMode::kNative);
  EXPECT_TRUE(prog->frags());
}

TEST_F(MultiBufferTest, SocketReportsMultiBuffer) {
  open_path();
  EXPECT_TRUE(path_.socket->multi_buffer());
  EXPECT_FALSE(path_.socket->zero_copy());
  EXPECT_EQ(path_.socket->bind_report().rfind("copy, multi-buffer (zerocopy refused: ", 0), 0u)
      << path_.socket->bind_report();
  EXPECT_EQ(path_.socket->tx_max_packet_descriptors(), kCopyModeMaxTxDescriptors);
  std::printf("bind report: %s\n", path_.socket->bind_report().c_str());
}

TEST_F(MultiBufferTest, JumboFramesArriveAsOneChainOfDescriptorsBytesIntact) {
  set_mtus(9100);
  open_path();
  const std::uint32_t lens[] = {100, kRoom, kRoom + 1, 3000, 8192, 9000, 9014, 9018};
  std::uint32_t seq = 0;
  for (const std::uint32_t len : lens) ASSERT_TRUE(peer_->send(guest_frame(seq++, len))) << len;
  const auto packets = path_.receive_packets(std::size(lens), 2000);
  ASSERT_EQ(packets.size(), std::size(lens));
  std::uint32_t total_descs = 0;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const auto& p = packets[i];
    const std::uint32_t len = lens[i];
    EXPECT_EQ(p.bytes, guest_frame(static_cast<std::uint32_t>(i), len)) << len;
    ASSERT_EQ(p.descs.size(), descriptors_for(len, kRoom)) << len;  // 9000 bytes: 6
    for (std::size_t k = 0; k < p.descs.size(); ++k) {
      const bool last = k + 1 == p.descs.size();
      EXPECT_EQ(continues(p.descs[k].options), !last) << len << " desc " << k;
      if (!last) {
        EXPECT_EQ(p.descs[k].len, kRoom) << len << " desc " << k;
      }
      EXPECT_EQ(p.descs[k].addr % 2048, kXdpPacketHeadroom);  // headroom in every buffer
    }
    total_descs += static_cast<std::uint32_t>(p.descs.size());
    std::printf("%u bytes: %zu descriptors\n", len, p.descs.size());
  }
  EXPECT_EQ(total_descs, 1u + 1 + 2 + 2 + 5 + 6 + 6 + 6);
  EXPECT_EQ(stats().redirected, std::size(lens));
  const XskStatistics st = xsk_stats();
  EXPECT_EQ(st.rx_dropped, 0u);
  EXPECT_EQ(st.rx_ring_full, 0u);
  EXPECT_EQ(st.rx_invalid_descs, 0u);
  expect_no_frame_lost();
}

TEST_F(MultiBufferTest, AFrameOneByteOverMaxFrameLenIsDroppedByTheProgram) {
  set_mtus(9100);
  XdpProgramOptions options;
  options.max_frame_len = 9018;  // a guest MTU of 9000
  open_path(true, options);
  ASSERT_TRUE(peer_->send(guest_frame(0, 9019)));
  ASSERT_TRUE(peer_->send(guest_frame(1, 9018)));
  const auto packets = path_.receive_packets(2, 500);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].bytes, guest_frame(1, 9018));
  // bpf_xdp_get_buff_len() measured the whole multi-buffer frame.
  EXPECT_EQ(stats().oversize_dropped, 1u);
  EXPECT_EQ(stats().redirected, 1u);
  EXPECT_EQ(xsk_stats().rx_dropped, 0u);
}

TEST_F(MultiBufferTest, FramesUpToTheLargestMtuArrive) {
  set_mtus(65535);
  open_path();
  const std::uint32_t lens[] = {36878, 65549};
  for (std::uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(peer_->send(guest_frame(i, lens[i])));
  const auto packets = path_.receive_packets(2, 2000);
  ASSERT_EQ(packets.size(), 2u);
  for (std::uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(packets[i].bytes, guest_frame(i, lens[i]));
    EXPECT_EQ(packets[i].descs.size(), descriptors_for(lens[i], kRoom));  // 21, 37
  }
  expect_no_frame_lost();
}

TEST_F(MultiBufferTest, WithoutMultiBufferTheKernelDropsLongFramesAndCountsThem) {
  set_mtus(9000);
  open_path(/*multi_buffer=*/false);
  EXPECT_FALSE(path_.socket->multi_buffer());
  EXPECT_EQ(path_.socket->tx_max_packet_descriptors(), 1u);
  ASSERT_TRUE(peer_->send(guest_frame(0, 9000)));
  ASSERT_TRUE(peer_->send(guest_frame(1, kRoom)));
  const auto frames = path_.receive(2, 500);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], guest_frame(1, kRoom));
  EXPECT_EQ(stats().redirected, 2u);  // XDP took both; the socket could not
  const XskStatistics st = xsk_stats();
  EXPECT_EQ(st.rx_dropped, 1u);
  EXPECT_EQ(st.rx_invalid_descs, 0u);
}

TEST_F(MultiBufferTest, PeekNeverEndsInsideAPacket) {
  set_mtus(9000);
  open_path();
  ASSERT_TRUE(peer_->send(guest_frame(0, 1000)));  // 1 descriptor
  ASSERT_TRUE(peer_->send(guest_frame(1, 9000)));  // 6
  ASSERT_TRUE(peer_->send(guest_frame(2, 1000)));  // 1
  ASSERT_EQ(path_.socket->rx_pending(), 8u);

  std::uint32_t idx = 0;
  // 4 descriptors end inside the long packet: only the first packet.
  ASSERT_EQ(path_.socket->rx_peek_packets(4, idx), 1u);
  EXPECT_EQ(path_.socket->rx_packet(idx, 1).len, 1000u);
  path_.umem->frames().free(path_.socket->rx_desc(idx).addr);
  path_.socket->rx_release(1);
  // The long packet does not fit 4 either: it comes alone, whole.
  ASSERT_EQ(path_.socket->rx_peek_packets(4, idx), 6u);
  const PacketExtent extent = path_.socket->rx_packet(idx, 6);
  EXPECT_EQ(extent.descriptors, 6u);
  EXPECT_EQ(extent.len, 9000u);
  std::vector<std::uint8_t> bytes;
  for (std::uint32_t k = 0; k < 6; ++k) {
    const xdp_desc& d = path_.socket->rx_desc(idx + k);
    bytes.insert(bytes.end(), path_.umem->data(d.addr), path_.umem->data(d.addr) + d.len);
    path_.umem->frames().free(d.addr);
  }
  EXPECT_EQ(bytes, guest_frame(1, 9000));
  path_.socket->rx_release(6);
  ASSERT_EQ(path_.socket->rx_peek_packets(4, idx), 1u);
  EXPECT_EQ(frame_seq(path_.umem->data(path_.socket->rx_desc(idx).addr)), 2u);
  path_.umem->frames().free(path_.socket->rx_desc(idx).addr);
  path_.socket->rx_release(1);
  EXPECT_EQ(path_.socket->rx_pending(), 0u);
  EXPECT_EQ(path_.socket->rx_peek_packets(4, idx), 0u);
}

// libxdp's next peek starts after the last descriptor peeked, not the last
// released: descriptors peeked and neither released nor given back are
// skipped (and their frames never return) until rx_cancel() gives them back.
TEST_F(MultiBufferTest, CancelGivesPeekedDescriptorsBackInOrder) {
  open_path();
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(peer_->send(guest_frame(i, 100)));
  std::uint32_t idx = 0;
  ASSERT_EQ(path_.socket->rx_peek(5, idx), 5u);
  // Use two, keep three (a destination was full) without giving them back:
  for (std::uint32_t k = 0; k < 2; ++k) {
    path_.umem->frames().free(path_.socket->rx_desc(idx + k).addr);
  }
  path_.socket->rx_release(2);
  EXPECT_EQ(path_.socket->rx_pending(), 3u);
  EXPECT_EQ(path_.socket->rx_peek(5, idx), 0u);  // skipped
  // Given back, they come again, in order.
  path_.socket->rx_cancel(3);
  ASSERT_EQ(path_.socket->rx_peek(5, idx), 3u);
  for (std::uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(frame_seq(path_.umem->data(path_.socket->rx_desc(idx + k).addr)), 2u + k);
    path_.umem->frames().free(path_.socket->rx_desc(idx + k).addr);
  }
  path_.socket->rx_release(3);
  path_.umem->refill(5);
  expect_no_frame_lost();
}

TEST_F(MultiBufferTest, MultiDescriptorTxPacketsReachThePeerIntact) {
  set_mtus(9000);
  open_path();
  std::uint32_t sent_descs = 0;
  std::vector<std::vector<std::uint8_t>> frames;
  for (const std::uint32_t len : {9018u, 9000u, 3000u, 2048u, 60u}) {
    // To the peer's MAC; the pattern is what the peer checks.
    frames.push_back(
        make_frame(mac_b_, mac_a_, static_cast<std::uint32_t>(frames.size()), len - 14));
    const std::uint32_t used = send_packet(frames.back());
    ASSERT_EQ(used, descriptors_for(len, 2048)) << len;  // 9018 bytes: 5
    sent_descs += used;
  }
  EXPECT_EQ(path_.umem->tx_in_flight(), sent_descs);
  kick_until_sent();
  const auto got = peer_->receive(frames.size(), 2000);
  ASSERT_EQ(got.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(got[i], frames[i]) << i;
  // Every descriptor's frame comes back on the completion ring.
  EXPECT_EQ(reclaim(sent_descs), sent_descs);
  EXPECT_EQ(path_.umem->tx_in_flight(), 0u);
  EXPECT_EQ(xsk_stats().tx_invalid_descs, 0u);
  expect_no_frame_lost();
}

TEST_F(MultiBufferTest, CopyModeTxTakesEighteenDescriptorsAndDropsNineteenWhole) {
  set_mtus(65535);
  open_path();
  // 18 descriptors: the kernel's limit, sent.
  const auto longest = make_frame(mac_b_, mac_a_, 1, 18 * 2048 - 14);
  ASSERT_EQ(send_packet(longest), 18u);
  kick_until_sent();
  const auto got = peer_->receive(1, 2000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], longest);
  EXPECT_EQ(reclaim(18), 18u);

  // 19: tx_reserve_packet refuses; forced onto the ring, the kernel drops the
  // chain whole, counts every descriptor invalid and still completes them.
  const auto too_long = make_frame(mac_b_, mac_a_, 2, 18 * 2048 + 1 - 14);
  EXPECT_EQ(send_packet(too_long), 0u);
  std::uint32_t idx = 0;
  ASSERT_EQ(path_.socket->tx_reserve(19, idx), 19u);
  for (std::uint32_t i = 0; i < 19; ++i) {
    const std::uint64_t addr = path_.umem->frames().alloc();
    const std::uint32_t off = i * 2048;
    const std::uint32_t chunk =
        std::min<std::uint32_t>(2048, static_cast<std::uint32_t>(too_long.size()) - off);
    std::memcpy(path_.umem->data(addr), too_long.data() + off, chunk);
    path_.socket->tx_packet_desc(idx, i, 19, addr, chunk);
  }
  path_.socket->tx_submit(19);
  kick_until_sent();
  EXPECT_TRUE(peer_->receive(1, 300).empty());
  EXPECT_EQ(xsk_stats().tx_invalid_descs, 19u);
  EXPECT_EQ(reclaim(19), 19u);
  expect_no_frame_lost();
}

TEST_F(MultiBufferTest, SkbModeCarriesJumboFramesWithThePlainProgramToo) {
  set_mtus(9000);
  XdpProgramOptions options;
  options.mode = XdpModeRequest::kSkb;
  options.frags = false;
  open_path(true, options);
  EXPECT_EQ(path_.program->mode(), XdpMode::kSkb);
  EXPECT_FALSE(path_.program->frags());
  ASSERT_TRUE(peer_->send(guest_frame(0, 9000)));
  const auto packets = path_.receive_packets(1, 2000);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].bytes, guest_frame(0, 9000));
  EXPECT_EQ(packets[0].descs.size(), 6u);
}

TEST_F(MultiBufferTest, AJumboFrameWithoutEnoughFillFramesIsDroppedWhole) {
  set_mtus(9000);
  std::string error;
  ASSERT_TRUE(path_.program = XdpProgram::attach(kIfA, {}, error)) << error;
  ASSERT_EQ(path_.program->add_guest_mac(kGuest), 0);
  ASSERT_TRUE(path_.umem = Umem::create({}, error)) << error;
  XskSocketConfig config;
  config.ifname = kIfA;
  config.multi_buffer = true;
  ASSERT_TRUE(path_.socket = XskSocket::create(*path_.umem, config, error)) << error;
  ASSERT_EQ(path_.program->register_socket(0, path_.socket->fd()), 0);
  ASSERT_EQ(path_.umem->refill(5), 5u);  // a 9000-byte frame needs 6
  ASSERT_TRUE(peer_->send(guest_frame(0, 9000)));
  EXPECT_EQ(path_.socket->rx_pending(), 0u);
  XskStatistics st = xsk_stats();
  EXPECT_EQ(st.rx_dropped, 1u);
  EXPECT_EQ(st.rx_fill_ring_empty_descs, 0u);  // the ring was not empty, only too short
  EXPECT_EQ(path_.umem->fill_level(), 5u);     // none of the five was used
  // The frames still serve a packet that fits them.
  ASSERT_TRUE(peer_->send(guest_frame(1, 8000)));
  const auto packets = path_.receive_packets(1, 2000);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].bytes, guest_frame(1, 8000));
  EXPECT_EQ(packets[0].descs.size(), 5u);
}

TEST_F(MultiBufferTest, APacketSplitByTheSendtoBudgetIsSentWhole) {
  set_mtus(9000);
  open_path();
  // 10 packets of 5 descriptors; one sendto() sends 32 descriptors, so the
  // first kick stops inside the seventh packet and the next goes on with it.
  std::vector<std::vector<std::uint8_t>> frames;
  for (std::uint32_t i = 0; i < 10; ++i) {
    frames.push_back(make_frame(mac_b_, mac_a_, i, 9000 - 14));
    ASSERT_EQ(send_packet(frames.back()), 5u);
  }
  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kAgain);
  EXPECT_EQ(path_.socket->tx_pending(), 50u - 32);
  kick_until_sent();
  const auto got = peer_->receive(10, 2000);
  ASSERT_EQ(got.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], frames[i]) << i;
  EXPECT_EQ(reclaim(50), 50u);
  expect_no_frame_lost();
}

// Not relied on (tx_max_packet_descriptors() is 1 without multi-buffer),
// but measured: 6.18's copy-mode TX follows XDP_PKT_CONTD chains on a
// socket bound without XDP_USE_SG as well.
TEST_F(MultiBufferTest, CopyModeTxFollowsChainsEvenWithoutXdpUseSg) {
  set_mtus(9000);
  open_path(/*multi_buffer=*/false);
  ASSERT_FALSE(path_.socket->multi_buffer());
  const auto frame = make_frame(mac_b_, mac_a_, 7, 9000 - 14);
  EXPECT_EQ(send_packet(frame), 0u);  // refused by the library
  std::uint32_t idx = 0;
  ASSERT_EQ(path_.socket->tx_reserve(5, idx), 5u);
  for (std::uint32_t i = 0; i < 5; ++i) {
    const std::uint64_t addr = path_.umem->frames().alloc();
    const std::uint32_t chunk = std::min<std::uint32_t>(2048, 9000 - i * 2048);
    std::memcpy(path_.umem->data(addr), frame.data() + i * 2048, chunk);
    path_.socket->tx_packet_desc(idx, i, 5, addr, chunk);
  }
  path_.socket->tx_submit(5);
  kick_until_sent();
  const auto got = peer_->receive(1, 2000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], frame);
  EXPECT_EQ(xsk_stats().tx_invalid_descs, 0u);
  EXPECT_EQ(reclaim(5), 5u);
}

TEST_F(MultiBufferTest, ProbeAndFrameLimitOfAVethUplink) {
  set_mtu(true, 9000);
  std::string note;
  nic::UplinkFrameFacts facts = nic::probe_uplink_frame_facts(kIfA, 2048, &note);
  EXPECT_EQ(facts.driver, "veth") << note;
  EXPECT_EQ(facts.interface_mtu, 9000u);
  EXPECT_TRUE(facts.kernel.known());
  ASSERT_TRUE(facts.xdp_features) << note;
  EXPECT_TRUE(facts.xdp_features->rx_sg()) << nic::to_string(*facts.xdp_features);
  std::printf("probe: kernel %s, driver %s, XDP features: %s\n", facts.kernel.to_string().c_str(),
              facts.driver.c_str(), nic::to_string(*facts.xdp_features).c_str());
  nic::UplinkFrameLimit before = nic::uplink_frame_limit(facts);
  EXPECT_EQ(before.max_frame, 9018u) << before.reason;  // the interface's MTU
  EXPECT_TRUE(before.multi_buffer);

  open_path();
  facts.xdp_mode = path_.program->mode();
  facts.program_frags = path_.program->frags();
  facts.zero_copy = path_.socket->zero_copy();
  facts.socket_multi_buffer = path_.socket->multi_buffer();
  const nic::UplinkFrameLimit after = nic::uplink_frame_limit(facts);
  EXPECT_EQ(after.max_frame, 9018u) << after.reason;
  EXPECT_TRUE(after.fits(9018));
  EXPECT_FALSE(after.fits(9019));
  EXPECT_NE(after.reason.find("interface MTU 9000"), std::string::npos) << after.reason;
  std::printf("limit: %u (%s)\n", after.max_frame, after.reason.c_str());
  facts.interface_mtu = 0;
  const nic::UplinkFrameLimit unbounded = nic::uplink_frame_limit(facts);
  EXPECT_EQ(unbounded.max_frame, 18u * 2048) << unbounded.reason;
  std::printf("limit without the MTU: %u (%s)\n", unbounded.max_frame, unbounded.reason.c_str());
}

}  // namespace
}  // namespace xdpvhost::xsk::test

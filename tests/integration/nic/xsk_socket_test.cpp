// The AF_XDP path on a veth: frames from the peer namespace to a guest MAC
// reach the socket, the node's own traffic keeps working, oversize frames
// are dropped, TX reaches the peer, and the kernel's statistics and
// need_wakeup flags behave as the library documents.
#include "xsk/xsk_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "frontend/frame_checksum.hpp"
#include "netns_fixture.hpp"
#include "xsk_path.hpp"

namespace xdpvhost::xsk::test {
namespace {

const MacAddress kGuest = {0x02, 0x00, 0x00, 0x00, 0x00, 0xaa};
const MacAddress kStranger = {0x02, 0x00, 0x00, 0x00, 0x00, 0xbb};
constexpr const char* kGuestIp = "10.77.0.100";

class XskSocketTest : public NetnsPair {
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

  void open_path(XdpProgramOptions options = {}, UmemConfig umem = {}) {
    ASSERT_TRUE(path_.open(kIfA, options, BindMode::kAuto, umem)) << path_.error;
    ASSERT_EQ(path_.program->add_guest_mac(kGuest), 0);
  }

  void send_from_b(const MacAddress& dst, std::uint32_t first_seq, int count,
                   std::size_t payload = 100) {
    for (int i = 0; i < count; ++i) {
      ASSERT_TRUE(peer_->send(make_frame(dst, mac_b_, first_seq + i, payload)));
    }
  }

  // b's kernel knows the guest: a permanent neighbour entry kGuestIp -> kGuest.
  void guest_is_neighbour_of_b() {
    std::string out;
    ASSERT_EQ(run_in_b(std::string("ip neigh add ") + kGuestIp + " lladdr " + kGuest.to_string() +
                           " dev " + kIfB + " nud permanent",
                       &out),
              0)
        << out;
  }

  // One UDP datagram from b's kernel stack to kGuestIp, port 4789.
  void udp_from_b_to_guest(std::string_view payload) {
    in_b([&] {
      const sys::UniqueFd udp(::socket(AF_INET, SOCK_DGRAM, 0));
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(4789);
      ::inet_pton(AF_INET, kGuestIp, &to.sin_addr);
      EXPECT_EQ(::sendto(udp.get(), payload.data(), payload.size(), 0,
                         reinterpret_cast<sockaddr*>(&to), sizeof to),
                static_cast<ssize_t>(payload.size()));
    });
  }

  XdpSteerStats stats() {
    XdpSteerStats s;
    EXPECT_EQ(path_.program->read_stats(s), 0);
    return s;
  }

  // Puts `count` frames to B on the TX ring (one reserve/submit).
  void submit_tx(int count, std::uint32_t first_seq) {
    std::uint32_t idx = 0;
    ASSERT_EQ(path_.socket->tx_reserve(count, idx), static_cast<std::uint32_t>(count));
    for (int i = 0; i < count; ++i) {
      const std::uint64_t addr = path_.umem->frames().alloc();
      ASSERT_NE(addr, FramePool::kInvalid);
      const auto frame = make_frame(mac_b_, mac_a_, first_seq + i, 100);
      std::memcpy(path_.umem->data(addr), frame.data(), frame.size());
      xdp_desc& d = path_.socket->tx_desc(idx + i);
      d.addr = addr;
      d.len = static_cast<std::uint32_t>(frame.size());
      d.options = 0;
    }
    path_.socket->tx_submit(count);
  }

  std::unique_ptr<PacketSocket> peer_;
  XskPath path_;
};

TEST_F(XskSocketTest, VethBindsInCopyModeAndSaysWhy) {
  open_path();
  EXPECT_FALSE(path_.socket->zero_copy());
  EXPECT_EQ(path_.socket->bind_report().rfind("copy (zerocopy refused: ", 0), 0u)
      << path_.socket->bind_report();
  std::printf("bind report: %s\n", path_.socket->bind_report().c_str());
}

TEST_F(XskSocketTest, ForcedZeroCopyFailsOnVethAndForcedCopyIsPlain) {
  std::string error;
  auto umem = Umem::create({}, error);
  ASSERT_TRUE(umem) << error;
  XskSocketConfig config;
  config.ifname = kIfA;
  config.bind_mode = BindMode::kZeroCopy;
  EXPECT_FALSE(XskSocket::create(*umem, config, error));
  EXPECT_NE(error.find("zero-copy bind refused"), std::string::npos) << error;

  auto umem2 = Umem::create({}, error);
  ASSERT_TRUE(umem2) << error;
  config.bind_mode = BindMode::kCopy;
  auto sock = XskSocket::create(*umem2, config, error);
  ASSERT_TRUE(sock) << error;
  EXPECT_EQ(sock->bind_report(), "copy");
  // A UMEM serves one socket in its lifetime.
  EXPECT_FALSE(XskSocket::create(*umem2, config, error));
}

TEST_F(XskSocketTest, GuestUnicastReachesTheSocketInOrder) {
  open_path();
  send_from_b(kGuest, 0, 50);
  const auto frames = path_.receive(50, 2000);
  ASSERT_EQ(frames.size(), 50u);
  for (std::uint32_t i = 0; i < 50; ++i) {
    ASSERT_EQ(frames[i].size(), 114u);
    EXPECT_TRUE(std::equal(kGuest.bytes.begin(), kGuest.bytes.end(), frames[i].begin()));
    EXPECT_EQ(frame_seq(frames[i].data()), i);
    EXPECT_EQ(frames[i], make_frame(kGuest, mac_b_, i, 100));
  }
  EXPECT_EQ(stats().redirected, 50u);
  EXPECT_EQ(path_.umem->frames().available() + path_.umem->fill_level(),
            path_.umem->config().frame_count);  // every frame is back
}

TEST_F(XskSocketTest, KernelUdpToTheGuestIpArrivesAsAFrame) {
  open_path();
  guest_is_neighbour_of_b();
  udp_from_b_to_guest("hello guest");
  const auto frames = path_.receive(1, 2000);
  ASSERT_EQ(frames.size(), 1u);
  const auto& f = frames[0];
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 11);
  EXPECT_EQ(f[12], 0x08);
  EXPECT_EQ(f[13], 0x00);  // IPv4
  EXPECT_EQ(std::memcmp(f.data() + 42, "hello guest", 11), 0);
}

// True if the IPv4/UDP frame's UDP checksum is there and verifies (the test
// frontend's checksum code, independent of the library's).
bool udp_checksum_ok(const std::vector<std::uint8_t>& f) {
  const auto report = xdpvhost::testing::verify_checksums(f);
  return report.ok() && !report.udp_checksum_absent;
}

// DESIGN.md: a veth peer with TX checksum offload hands XDP frames whose
// L4 checksum is unfinished (CHECKSUM_PARTIAL); with offload off they are
// complete. Both halves checked here, since the dataplane must know.
TEST_F(XskSocketTest, PeerChecksumOffloadDecidesWhetherUdpChecksumsAreComplete) {
  open_path();
  guest_is_neighbour_of_b();
  std::string out;
  ASSERT_EQ(run_in_b(std::string("ethtool -K ") + kIfB + " tx on", &out), 0) << out;
  udp_from_b_to_guest("checksum me");
  auto frames = path_.receive(1, 2000);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_FALSE(udp_checksum_ok(frames[0])) << "offload on: expected a partial checksum";

  ASSERT_EQ(run_in_b(std::string("ethtool -K ") + kIfB + " tx off", &out), 0) << out;
  udp_from_b_to_guest("checksum me");
  frames = path_.receive(1, 2000);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(udp_checksum_ok(frames[0]));
}

TEST_F(XskSocketTest, NodeTrafficKeepsWorkingWhileAttached) {
  open_path();
  int replies = 0;
  in_b([&] { replies = icmp_ping(kIpA, 3); });  // b -> the node's own address
  EXPECT_EQ(replies, 3);
  EXPECT_EQ(icmp_ping(kIpB, 3), 3);  // and the node's own requests out
  const XdpSteerStats s = stats();
  EXPECT_GE(s.passed_host, 6u);   // 3 echo requests + 3 replies to the node's MAC
  EXPECT_GE(s.passed_flood, 1u);  // b's ARP request for the node
  EXPECT_EQ(s.redirected, 0u);
  EXPECT_TRUE(path_.receive(1, 100).empty());
}

TEST_F(XskSocketTest, OtherUnicastAndMulticastAreNotRedirected) {
  open_path();
  send_from_b(kStranger, 0, 3);
  send_from_b(*net::MacAddress::parse("33:33:00:00:00:01"), 10, 2);
  send_from_b(*net::MacAddress::parse("ff:ff:ff:ff:ff:ff"), 20, 1);
  EXPECT_TRUE(path_.receive(1, 200).empty());
  const XdpSteerStats s = stats();
  EXPECT_EQ(s.passed_host, 3u);
  EXPECT_EQ(s.passed_flood, 3u);
  EXPECT_EQ(s.redirected, 0u);
}

TEST_F(XskSocketTest, OversizeGuestFramesAreDroppedAndCounted) {
  XdpProgramOptions options;
  options.max_frame_len = 200;
  open_path(options);
  send_from_b(kGuest, 0, 1, 300);       // 314 bytes: dropped
  send_from_b(kGuest, 1, 1, 200 - 14);  // exactly 200: kept
  send_from_b(kGuest, 2, 1, 100);       // kept
  const auto frames = path_.receive(2, 2000);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frame_seq(frames[0].data()), 1u);
  EXPECT_EQ(frame_seq(frames[1].data()), 2u);
  EXPECT_EQ(stats().oversize_dropped, 1u);
  // The limit can change at run time; 0 removes it.
  ASSERT_EQ(path_.program->set_max_frame_len(0), 0);
  send_from_b(kGuest, 3, 1, 300);
  EXPECT_EQ(path_.receive(1, 2000).size(), 1u);
  EXPECT_EQ(stats().oversize_dropped, 1u);
}

TEST_F(XskSocketTest, FramesLongerThanTheUmemFrameRoomAreDroppedByTheKernel) {
  std::string out;
  ASSERT_EQ(run_in_a(std::string("ip link set ") + kIfA + " mtu 3000", &out), 0) << out;
  ASSERT_EQ(run_in_b(std::string("ip link set ") + kIfB + " mtu 3000", &out), 0) << out;
  open_path();  // 2048-byte frames, no headroom
  const std::uint32_t room = path_.umem->max_rx_frame_len();
  EXPECT_EQ(room, 2048u - 256u);
  send_from_b(kGuest, 0, 1, room - 14);      // fits exactly
  send_from_b(kGuest, 1, 1, room - 14 + 1);  // one byte too long
  const auto frames = path_.receive(2, 500);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].size(), room);
  XskStatistics st;
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.rx_dropped, 1u);
}

TEST_F(XskSocketTest, WithoutASocketOnTheQueueGuestFramesPassAndCount) {
  open_path();
  ASSERT_EQ(path_.program->unregister_socket(0), 0);
  send_from_b(kGuest, 0, 4);
  EXPECT_TRUE(path_.receive(1, 200).empty());
  EXPECT_EQ(stats().redirect_failed, 4u);
  ASSERT_EQ(path_.program->register_socket(0, path_.socket->fd()), 0);
  send_from_b(kGuest, 4, 1);
  EXPECT_EQ(path_.receive(1, 2000).size(), 1u);
}

TEST_F(XskSocketTest, BypassPassesEverythingToTheKernel) {
  open_path();
  ASSERT_EQ(path_.program->set_bypass(true), 0);
  send_from_b(kGuest, 0, 2);
  EXPECT_TRUE(path_.receive(1, 200).empty());
  EXPECT_EQ(stats().bypassed, 2u);
  ASSERT_EQ(path_.program->set_bypass(false), 0);
  send_from_b(kGuest, 2, 1);
  EXPECT_EQ(path_.receive(1, 2000).size(), 1u);
}

TEST_F(XskSocketTest, CopyModeTxSendsABoundedBatchPerKick) {
  open_path();
  // Copy mode: the kernel never clears the TX need_wakeup flag, and frames
  // only leave inside sendto() -- at most 32 per call (TX_BATCH_SIZE).
  EXPECT_TRUE(path_.socket->tx_needs_wakeup());
  EXPECT_FALSE(path_.socket->tx_kick_needed());
  submit_tx(100, 0);
  EXPECT_EQ(path_.umem->tx_in_flight(), 100u);
  EXPECT_EQ(path_.socket->tx_pending(), 100u);
  EXPECT_TRUE(path_.socket->tx_kick_needed());

  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kAgain);
  EXPECT_EQ(path_.socket->tx_pending(), 68u);
  int kicks = 1;
  while (path_.socket->tx_kick_needed() && kicks < 10) {
    const WakeupResult r = path_.socket->kick_tx();
    ASSERT_TRUE(r == WakeupResult::kOk || r == WakeupResult::kAgain) << to_string(r);
    ++kicks;
  }
  EXPECT_EQ(kicks, 4);  // 32 + 32 + 32 + 4
  EXPECT_EQ(path_.socket->tx_pending(), 0u);
  EXPECT_TRUE(path_.socket->tx_needs_wakeup());

  const auto got = peer_->receive(100, 2000);
  ASSERT_EQ(got.size(), 100u);
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(frame_seq(got[i].data()), i);

  std::uint32_t reclaimed = 0;
  for (int i = 0; i < 100 && reclaimed < 100; ++i) reclaimed += path_.umem->reclaim_completions(64);
  EXPECT_EQ(reclaimed, 100u);
  EXPECT_EQ(path_.umem->tx_in_flight(), 0u);
}

TEST_F(XskSocketTest, TxBudgetRaisesTheCopyModeBatch) {
  open_path();
  const int err = path_.socket->set_tx_budget(64);
  if (err == -ENOPROTOOPT) GTEST_SKIP() << "kernel lacks XDP_MAX_TX_SKB_BUDGET";
  ASSERT_EQ(err, 0);
  submit_tx(100, 0);
  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kAgain);
  EXPECT_EQ(path_.socket->tx_pending(), 36u);
  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kOk);
  EXPECT_EQ(peer_->receive(100, 2000).size(), 100u);
}

TEST_F(XskSocketTest, KickOnADownInterfaceSaysNetDown) {
  open_path();
  submit_tx(1, 0);
  std::string out;
  ASSERT_EQ(run_in_a(std::string("ip link set ") + kIfA + " down", &out), 0) << out;
  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kNetDown);
  EXPECT_EQ(path_.socket->wakeup_rx(), WakeupResult::kNetDown);
  ASSERT_EQ(run_in_a(std::string("ip link set ") + kIfA + " up", &out), 0) << out;
  EXPECT_EQ(path_.socket->kick_tx(), WakeupResult::kOk);
  EXPECT_EQ(path_.socket->wakeup_rx(), WakeupResult::kOk);
}

TEST_F(XskSocketTest, CopyModeRxNeedsNoWakeup) {
  open_path();
  // The fill ring's need_wakeup flag is set only by zero-copy drivers.
  EXPECT_FALSE(path_.umem->fill_needs_wakeup());
  send_from_b(kGuest, 0, 3);
  EXPECT_EQ(path_.socket->rx_pending(), 3u);  // delivered without any syscall of ours
  EXPECT_EQ(path_.receive(3, 2000).size(), 3u);
  EXPECT_FALSE(path_.umem->fill_needs_wakeup());
}

TEST_F(XskSocketTest, StatisticsCountAnEmptyFillRingAndAFullRxRing) {
  // No fill frames yet: every frame is dropped and the kernel says why.
  std::string error;
  ASSERT_TRUE(path_.program = XdpProgram::attach(kIfA, {}, error)) << error;
  ASSERT_EQ(path_.program->add_guest_mac(kGuest), 0);
  ASSERT_TRUE(path_.umem = Umem::create({}, error)) << error;
  XskSocketConfig config;
  config.ifname = kIfA;
  config.rx_size = 64;
  ASSERT_TRUE(path_.socket = XskSocket::create(*path_.umem, config, error)) << error;
  ASSERT_EQ(path_.program->register_socket(0, path_.socket->fd()), 0);

  XskStatistics st;
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.rx_dropped, 0u);
  send_from_b(kGuest, 0, 5);
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.rx_dropped, 5u);
  EXPECT_EQ(st.rx_fill_ring_empty_descs, 5u);
  EXPECT_EQ(stats().redirected, 5u);              // XDP redirected them; the socket had no frame
  EXPECT_FALSE(path_.umem->fill_needs_wakeup());  // copy mode: not even now

  // Fill frames but leave the 64-entry RX ring unconsumed: 36 of 100 find it full.
  path_.umem->refill(1024);
  send_from_b(kGuest, 5, 100);
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.rx_ring_full, 36u);
  EXPECT_EQ(path_.socket->rx_pending(), 64u);
  EXPECT_EQ(st.rx_invalid_descs, 0u);
  EXPECT_EQ(st.tx_invalid_descs, 0u);
}

TEST_F(XskSocketTest, InvalidTxDescriptorIsCounted) {
  open_path();
  std::uint32_t idx = 0;
  ASSERT_EQ(path_.socket->tx_reserve(1, idx), 1u);
  xdp_desc& d = path_.socket->tx_desc(idx);
  d.addr = std::uint64_t{1} << 40;  // far outside the UMEM
  d.len = 60;
  d.options = 0;
  path_.socket->tx_submit(1);
  (void)path_.socket->kick_tx();
  XskStatistics st;
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.tx_invalid_descs, 1u);
}

TEST_F(XskSocketTest, HugepageRequestFallsBackAndSaysSo) {
  std::string error;
  UmemConfig config;
  config.hugepages = true;
  auto umem = Umem::create(config, error);
  ASSERT_TRUE(umem) << error;
  std::string pages;
  run_shell("cat /proc/sys/vm/nr_hugepages", &pages);
  if (std::stoi(pages) == 0) {
    EXPECT_FALSE(umem->on_hugepages());
  }
  std::printf("hugepages: %s (nr_hugepages=%d)\n", umem->on_hugepages() ? "yes" : "no",
              std::stoi(pages));
  EXPECT_EQ(umem->frames().available(), config.frame_count);
}

}  // namespace
}  // namespace xdpvhost::xsk::test

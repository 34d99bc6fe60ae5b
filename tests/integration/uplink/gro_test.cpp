// Software GRO on an uplink in multi-buffer mode: with MTU 9000 a
// 9014-byte TCP segment from the wire arrives as a chain of AF_XDP
// descriptors (3 of 4096-byte UMEM frames, 6 of 2048-byte ones), and in-order
// segments of one flow still reach a guest that negotiated GUEST_TSO4 as one
// GSO frame: gso_type TCPV4, gso_size = the MSS, NEEDS_CSUM, the payloads
// concatenated. The peer sends hand-built segments through a packet socket
// while the daemon is stopped (SIGSTOP), so that they wait on its RX ring and
// are taken in one burst, as a fast sender's would be.

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "frontend/frame_checksum.hpp"
#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;
using virtio::NetHeader;

constexpr std::uint32_t kMtu = 9000;
constexpr std::uint32_t kMss = kMtu - 20 - 20;  // IPv4 and TCP without options
constexpr std::uint16_t kSrcPort = 40000;
constexpr std::uint16_t kDstPort = 5201;

// Every thread of `pid` is stopped (state T in /proc/<pid>/task/*/stat).
bool all_threads_stopped(pid_t pid) {
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const std::size_t comm_end = stat.rfind(')');  // "tid (comm) S ..."
    if (comm_end == std::string::npos || comm_end + 2 >= stat.size()) return false;
    const char state = stat[comm_end + 2];
    if (state != 'T' && state != 't') return false;
  }
  return !ec;
}

// SIGSTOP now, SIGCONT when it goes (also when an assertion ends the test).
// Stopped only once every thread is: a signal takes effect on a running
// thread a little later, and a busy-polling service thread would take the
// first frames meanwhile.
class Paused {
 public:
  explicit Paused(pid_t pid) : pid_(pid) {
    if (::kill(pid_, SIGSTOP) != 0) return;
    stopped_ = true;
    for (int i = 0; i < 500 && !all_threads_stopped(pid_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    all_stopped_ = all_threads_stopped(pid_);
  }
  ~Paused() { resume(); }
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;
  bool stopped() const noexcept { return stopped_ && all_stopped_; }
  void resume() {
    if (stopped_) ::kill(pid_, SIGCONT);
    stopped_ = false;
  }

 private:
  pid_t pid_;
  bool stopped_ = false;
  bool all_stopped_ = false;
};

class Gro : public UplinkTest, public ::testing::WithParamInterface<std::uint32_t> {
 protected:
  void start(std::uint32_t frame_size) {
    std::string out;
    const std::string set_mtu = " mtu " + std::to_string(kMtu);
    ASSERT_EQ(lab_.in_node(std::string("ip link set ") + UplinkLab::kNodeIf + set_mtu, &out), 0)
        << out;
    ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + set_mtu, &out), 0)
        << out;
    json uplink = uplink_config();
    uplink["frame_size"] = frame_size;
    json port = port_config(kVm1);
    port["mtu"] = kMtu;
    ASSERT_NO_FATAL_FAILURE(
        start_daemon(daemon_config(json::array({uplink}), json::array({port}))));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));  // a Linux guest's features: GUEST_TSO4
    NetnsScope in(lab_.peer_fd());
    peer_ = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, 0x0800);
    ASSERT_TRUE(peer_->valid());
  }

  // Segment `i` of the peer's flow to vm1 carrying `payload` (seq and IPv4 id
  // count on from segment 0). spec(0, the payloads of segments 0..n-1) is the
  // frame GRO should make of those segments.
  testing::TcpFrameSpec spec(std::uint32_t i, std::vector<std::uint8_t> payload) const {
    testing::TcpFrameSpec s;
    s.dst_mac = vm1_->mac();
    s.src_mac = kPeerMac;
    s.src_ip = kPeerIp;
    s.dst_ip = vm1_->ip();
    s.src_port = kSrcPort;
    s.dst_port = kDstPort;
    s.seq = 1000 + i * kMss;
    s.ack = 1;
    s.flags = 0x10;  // ACK
    s.window = 1024;
    s.ip_id = static_cast<std::uint16_t>(100 + i);
    s.payload = std::move(payload);
    return s;
  }

  std::unique_ptr<FrontendGuest> vm1_;
  std::unique_ptr<PacketSocket> peer_;
};

TEST_P(Gro, NineThousandByteSegmentsInDescriptorChainsReachATsoGuestAsOneGsoFrame) {
  ASSERT_NO_FATAL_FAILURE(start(GetParam()));
  // 8 segments: 7 fill a 64 KiB IP packet (40 + 7 * 8960 = 62760 bytes), the
  // 8th would pass 65535 and goes on alone.
  constexpr std::uint32_t kSegments = 8;
  constexpr std::uint32_t kMerged = 7;
  std::vector<std::vector<std::uint8_t>> segments;
  std::vector<std::uint8_t> merged_payload;
  for (std::uint32_t i = 0; i < kSegments; ++i) {
    std::vector<std::uint8_t> payload = testing::payload_pattern(kMss, i + 1);
    if (i < kMerged) merged_payload.insert(merged_payload.end(), payload.begin(), payload.end());
    segments.push_back(testing::build_tcp(spec(i, std::move(payload))));
    ASSERT_EQ(segments.back().size(), kMtu + 14u);
  }
  // The frame GRO makes: the first segment's headers with the IP length of
  // all seven, the TCP checksum field holding the pseudo-header sum.
  std::vector<std::uint8_t> expected = testing::build_tcp(spec(0, merged_payload));
  ASSERT_TRUE(testing::make_checksum_partial(expected).has_value());

  const json before = uplink_stats();
  const std::uint64_t node_rx = lab_.node_link().rx_packets;
  {
    Paused paused(daemon_->pid());
    ASSERT_TRUE(paused.stopped());
    for (const auto& s : segments) ASSERT_TRUE(peer_->send(s));
    // The node end's XDP program saw them all (veth counts what its XDP
    // program runs on); a moment more for the redirect to reach the ring.
    ASSERT_TRUE(wait_for([&] { return lab_.node_link().rx_packets >= node_rx + kSegments; }))
        << lab_.node_link().rx_packets - node_rx;
    std::this_thread::sleep_for(100ms);
  }

  const auto ours = [](const PacketView& v) {
    return v.tcp && v.src_port == kSrcPort && v.dst_port == kDstPort;
  };
  ASSERT_TRUE(vm1_->pump_until(ours, 2)) << vm1_->count(ours) << "\n" << uplink_stats().dump();
  vm1_->pump(200ms);  // nothing more comes
  std::vector<testing::ReceivedFrame> got;
  for (const auto& f : vm1_->received()) {
    if (ours(PacketView::parse(f.bytes))) got.push_back(f);
  }
  ASSERT_EQ(got.size(), 2u) << uplink_stats().dump();

  const NetHeader& h = got[0].header;
  EXPECT_EQ(h.gso_type, NetHeader::kGsoTcpv4);
  EXPECT_EQ(h.gso_size, kMss);
  EXPECT_EQ(h.hdr_len, 14 + 20 + 20);
  EXPECT_EQ(h.flags, NetHeader::kFlagNeedsCsum);
  EXPECT_EQ(h.csum_start, 14 + 20);
  EXPECT_EQ(h.csum_offset, 16);
  EXPECT_EQ(got[0].bytes.size(), expected.size());
  EXPECT_TRUE(got[0].bytes == expected) << "the GSO frame differs from the merged segments";
  // What the guest does with NEEDS_CSUM gives the frame a valid checksum.
  std::vector<std::uint8_t> completed = got[0].bytes;
  ASSERT_TRUE(testing::complete_partial_checksum(completed, h.csum_start, h.csum_offset));
  EXPECT_TRUE(completed == testing::build_tcp(spec(0, merged_payload)));

  // The 8th alone, unchanged, its checksum verified by GRO.
  EXPECT_EQ(got[1].header.gso_type, NetHeader::kGsoNone);
  EXPECT_EQ(got[1].header.flags, NetHeader::kFlagDataValid);
  EXPECT_TRUE(got[1].bytes == segments[kMerged]);

  const json after = uplink_stats();
  EXPECT_EQ(u(after, "gro_frames") - u(before, "gro_frames"), 1u) << after.dump();
  EXPECT_EQ(u(after, "gro_segments") - u(before, "gro_segments"), kMerged) << after.dump();
  EXPECT_EQ(u(after, "rx_packets") - u(before, "rx_packets"), kSegments) << after.dump();
  EXPECT_EQ(total(after.at("drops")) + total(port_stats("vm1").at("drops")), 0u);
}

// 4096-byte UMEM frames: 3 descriptors per segment; 2048-byte ones: 6.
INSTANTIATE_TEST_SUITE_P(FrameSizes, Gro, ::testing::Values(4096u, 2048u),
                         [](const ::testing::TestParamInfo<std::uint32_t>& p) {
                           return "FrameSize" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace xdpvhost::uplink_test

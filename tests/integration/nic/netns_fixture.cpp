#include "netns_fixture.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/icmp_socket.hpp"

namespace xdpvhost::xsk::test {

std::vector<std::uint8_t> make_frame(const MacAddress& dst, const MacAddress& src,
                                     std::uint32_t seq, std::size_t payload_len,
                                     std::uint16_t ether_type) {
  std::vector<std::uint8_t> f(14 + payload_len);
  std::copy(dst.bytes.begin(), dst.bytes.end(), f.begin());
  std::copy(src.bytes.begin(), src.bytes.end(), f.begin() + 6);
  f[12] = static_cast<std::uint8_t>(ether_type >> 8);
  f[13] = static_cast<std::uint8_t>(ether_type);
  for (std::size_t i = 0; i < payload_len; ++i) f[14 + i] = static_cast<std::uint8_t>(i * 7);
  if (payload_len >= 4) {
    const std::uint32_t be = htonl(seq);
    std::memcpy(f.data() + 14, &be, 4);
  }
  return f;
}

std::uint32_t frame_seq(const std::uint8_t* frame) {
  std::uint32_t be;
  std::memcpy(&be, frame + 14, 4);
  return ntohl(be);
}

int icmp_ping(const std::string& ipv4, int count, int timeout_ms) {
  test_support::IcmpSocket icmp(static_cast<std::uint16_t>(::getpid()));
  return icmp.ping(ipv4, count, timeout_ms);
}

PacketSocket::PacketSocket(const std::string& ifname, std::uint16_t ether_type) {
  ifindex_ = static_cast<int>(::if_nametoindex(ifname.c_str()));
  fd_.reset(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ether_type)));
  if (!fd_ || ifindex_ == 0) {
    fd_.reset();
    return;
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ether_type);
  sll.sll_ifindex = ifindex_;
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) fd_.reset();
}

bool PacketSocket::send(const std::vector<std::uint8_t>& frame) {
  return ::send(fd_.get(), frame.data(), frame.size(), 0) == static_cast<ssize_t>(frame.size());
}

std::vector<std::vector<std::uint8_t>> PacketSocket::receive(std::size_t count, int timeout_ms) {
  std::vector<std::vector<std::uint8_t>> frames;
  int waited = 0;
  while (frames.size() < count && waited <= timeout_ms) {
    std::vector<std::uint8_t> buf(70000);  // the longest frame veth carries (MTU 65535)
    sockaddr_ll from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n >= 0) {
      if (from.sll_pkttype == PACKET_OUTGOING) continue;  // our own sends
      buf.resize(static_cast<std::size_t>(n));
      frames.push_back(std::move(buf));
      continue;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, 10);
    waited += 10;
  }
  return frames;
}

namespace {

constexpr std::string_view kNamespacePrefix = "xskt";

}  // namespace

MacAddress read_mac(const std::string& ns, const std::string& ifname) {
  std::string out;
  run_shell("ip -n " + ns + " -br link show " + ifname, &out);
  // "xskv0@xskv1  UP  aa:bb:cc:dd:ee:ff <...>"
  for (std::size_t i = 0; i + 17 <= out.size(); ++i) {
    if (const auto mac = net::MacAddress::parse(std::string_view(out).substr(i, 17))) return *mac;
  }
  return {};
}

void NetnsPair::SetUp() {
  test_support::remove_orphaned_namespaces(kNamespacePrefix);
  ns_a_ = test_support::namespace_name(kNamespacePrefix, "a");
  ns_b_ = test_support::namespace_name(kNamespacePrefix, "b");
  a_.emplace(ns_a_);
  b_.emplace(ns_b_);
  std::string out;
  ASSERT_TRUE(a_->create(out)) << out;
  ASSERT_TRUE(b_->create(out)) << out;
  const std::string script =
      "set -e; ip -n " + ns_a_ + " link add " + kIfA + " type veth peer name " + kIfB + " netns " +
      ns_b_ + "; ip -n " + ns_a_ + " addr add " + kIpA + "/24 dev " + kIfA + "; ip -n " + ns_b_ +
      " addr add " + kIpB + "/24 dev " + kIfB + "; ip -n " + ns_a_ + " link set " + kIfA +
      " up; ip -n " + ns_b_ + " link set " + kIfB + " up";
  ASSERT_EQ(run_shell(script, &out), 0) << out;
  mac_a_ = read_mac(ns_a_, kIfA);
  mac_b_ = read_mac(ns_b_, kIfB);
  ASSERT_NE(mac_a_, MacAddress{});
  in_a_.emplace(a_->fd());
  ASSERT_TRUE(in_a_->ok()) << std::strerror(errno);
}

void NetnsPair::TearDown() {
  in_a_.reset();
  a_.reset();
  b_.reset();
}

void NetnsPair::in_b(const std::function<void()>& fn) {
  test_support::NetnsScope in(b_->fd());
  ASSERT_TRUE(in.ok());
  fn();
}

int NetnsPair::run_in_b(const std::string& command, std::string* output) {
  return b_->exec(command, output);
}

int NetnsPair::run_in_a(const std::string& command, std::string* output) {
  return a_->exec(command, output);
}

}  // namespace xdpvhost::xsk::test

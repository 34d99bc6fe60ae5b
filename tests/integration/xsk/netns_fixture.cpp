#include "netns_fixture.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace xdpvhost::xsk::test {

int run(const std::string& command, std::string* output) {
  const std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  std::string out;
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (output != nullptr) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::uint8_t> make_frame(const MacAddress& dst, const MacAddress& src,
                                     std::uint32_t seq, std::size_t payload_len,
                                     std::uint16_t ether_type) {
  std::vector<std::uint8_t> f(14 + payload_len);
  std::copy(dst.begin(), dst.end(), f.begin());
  std::copy(src.begin(), src.end(), f.begin() + 6);
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

namespace {

std::uint16_t inet_checksum(const std::uint8_t* data, std::size_t len) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2)
    sum += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(data[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace

int icmp_ping(const std::string& ipv4, int count, int timeout_ms) {
  const sys::UniqueFd fd(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!fd) return -errno;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ipv4.c_str(), &to.sin_addr) != 1) return -EINVAL;
  const std::uint16_t id = static_cast<std::uint16_t>(::getpid());
  int replies = 0;
  for (int seq = 1; seq <= count; ++seq) {
    std::uint8_t req[16] = {8,
                            0,
                            0,
                            0,
                            static_cast<std::uint8_t>(id >> 8),
                            static_cast<std::uint8_t>(id),
                            0,
                            static_cast<std::uint8_t>(seq)};
    const std::uint16_t sum = inet_checksum(req, sizeof req);
    req[2] = static_cast<std::uint8_t>(sum >> 8);
    req[3] = static_cast<std::uint8_t>(sum);
    if (::sendto(fd.get(), req, sizeof req, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) {
      continue;
    }
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
      std::uint8_t buf[1500];
      const ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 20) {
        const std::size_t ihl = static_cast<std::size_t>(buf[0] & 0x0f) * 4;
        const std::uint8_t* icmp = buf + ihl;
        if (static_cast<std::size_t>(n) >= ihl + 8 && icmp[0] == 0 &&
            (icmp[4] << 8 | icmp[5]) == id && icmp[7] == seq) {
          ++replies;
          break;
        }
        continue;
      }
      pollfd p{fd.get(), POLLIN, 0};
      ::poll(&p, 1, 10);
    }
  }
  return replies;
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
    std::vector<std::uint8_t> buf(10000);
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

bool pid_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Deletes xskt<pid>-* namespaces whose creating process no longer exists.
void remove_orphaned_namespaces() {
  DIR* dir = ::opendir("/var/run/netns");
  if (dir == nullptr) return;
  std::vector<std::string> doomed;
  while (const dirent* e = ::readdir(dir)) {
    int pid = 0;
    char tail = 0;
    if (std::sscanf(e->d_name, "xskt%d-%c", &pid, &tail) == 2 && !pid_alive(pid)) {
      doomed.emplace_back(e->d_name);
    }
  }
  ::closedir(dir);
  for (const std::string& ns : doomed) run("ip netns del " + ns);
}

}  // namespace

MacAddress read_mac(const std::string& ns, const std::string& ifname) {
  std::string out;
  run("ip -n " + ns + " -br link show " + ifname, &out);
  // "xskv0@xskv1  UP  aa:bb:cc:dd:ee:ff <...>"
  for (std::size_t i = 0; i + 17 <= out.size(); ++i) {
    if (const auto mac = parse_mac(std::string_view(out).substr(i, 17))) return *mac;
  }
  return {};
}

void NetnsPair::SetUp() {
  remove_orphaned_namespaces();
  const std::string id = "xskt" + std::to_string(::getpid());
  ns_a_ = id + "-a";
  ns_b_ = id + "-b";
  run("ip netns del " + ns_a_);
  run("ip netns del " + ns_b_);
  std::string out;
  const std::string script =
      "set -e; ip netns add " + ns_a_ + "; ip netns add " + ns_b_ + "; for ns in " + ns_a_ + " " +
      ns_b_ + "; do ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 " +
      "net.ipv6.conf.default.disable_ipv6=1; done; ip -n " + ns_a_ + " link add " + kIfA +
      " type veth peer name " + kIfB + " netns " + ns_b_ + "; ip -n " + ns_a_ + " addr add " +
      kIpA + "/24 dev " + kIfA + "; ip -n " + ns_b_ + " addr add " + kIpB + "/24 dev " + kIfB +
      "; ip -n " + ns_a_ + " link set lo up; ip -n " + ns_b_ + " link set lo up; ip -n " + ns_a_ +
      " link set " + kIfA + " up; ip -n " + ns_b_ + " link set " + kIfB + " up";
  created_ = true;
  ASSERT_EQ(run(script, &out), 0) << out;
  mac_a_ = read_mac(ns_a_, kIfA);
  mac_b_ = read_mac(ns_b_, kIfB);
  ASSERT_NE(mac_a_, MacAddress{});
  original_ns_.reset(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  fd_a_.reset(::open(("/var/run/netns/" + ns_a_).c_str(), O_RDONLY | O_CLOEXEC));
  fd_b_.reset(::open(("/var/run/netns/" + ns_b_).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(original_ns_ && fd_a_ && fd_b_);
  ASSERT_EQ(::setns(fd_a_.get(), CLONE_NEWNET), 0) << std::strerror(errno);
}

void NetnsPair::TearDown() {
  if (original_ns_) (void)::setns(original_ns_.get(), CLONE_NEWNET);
  if (created_) {
    run("ip netns del " + ns_a_);
    run("ip netns del " + ns_b_);
  }
}

void NetnsPair::in_b(const std::function<void()>& fn) {
  ASSERT_EQ(::setns(fd_b_.get(), CLONE_NEWNET), 0);
  fn();
  ASSERT_EQ(::setns(fd_a_.get(), CLONE_NEWNET), 0);
}

int NetnsPair::run_in_b(const std::string& command, std::string* output) {
  return run("ip netns exec " + ns_b_ + " " + command, output);
}

int NetnsPair::run_in_a(const std::string& command, std::string* output) {
  return run("ip netns exec " + ns_a_ + " " + command, output);
}

}  // namespace xdpvhost::xsk::test

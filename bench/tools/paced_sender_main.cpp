// xvb-paced-send: the paced "outside" source. Sends one UDP/IPv4 frame of a
// fixed length at a fixed rate from an AF_PACKET socket with
// PACKET_QDISC_BYPASS, in bursts of `burst` frames per sendmmsg(), each burst
// released at its due time (clock_nanosleep, TIMER_ABSTIME, 1 ns timer
// slack) so the sender sleeps between bursts and leaves its core to the
// backend. Prints one JSON line with what it sent.

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/frame_builder.hpp"
#include "net/mac_address.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::bench {
namespace {

using testing::Ipv4Address;
using testing::MacAddress;

constexpr std::size_t kUdpHeadersLen = 14 + 20 + 8;  // Ethernet, IPv4, UDP

struct Options {
  std::string ifname;
  MacAddress dst_mac{};
  std::optional<MacAddress> src_mac;
  Ipv4Address src_ip{};
  Ipv4Address dst_ip{};
  std::size_t size = 64;
  double rate = 100000;
  double duration = 1.0;
  unsigned burst = 0;  // 0: derive from the rate (a burst at most every 20 us)
  bool spin = false;
};

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void sleep_until(std::uint64_t t_ns, bool spin) {
  if (spin) {
    while (now_ns() < t_ns) {
    }
    return;
  }
  timespec ts{static_cast<time_t>(t_ns / 1'000'000'000ULL),
              static_cast<long>(t_ns % 1'000'000'000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

bool parse_ip(const char* text, Ipv4Address& out) {
  return inet_pton(AF_INET, text, out.data()) == 1;
}

std::optional<MacAddress> parse_mac(const char* text) {
  const auto mac = net::MacAddress::parse(text);
  if (!mac) return std::nullopt;
  return mac->bytes;
}

// One UDP/IPv4 frame of exactly frame_len bytes (without FCS) with complete
// checksums; the payload counts up from 8 (its offset in the UDP datagram).
std::vector<std::uint8_t> udp_frame(const Options& o) {
  std::vector<std::uint8_t> payload(o.size - kUdpHeadersLen);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i + 8);
  return testing::build_udp({.dst_mac = o.dst_mac,
                             .src_mac = *o.src_mac,
                             .src_ip = o.src_ip,
                             .dst_ip = o.dst_ip,
                             .src_port = 9,
                             .dst_port = 9,
                             .payload = std::move(payload)});
}

int usage() {
  std::fprintf(
      stderr,
      "usage: xvb-paced-send --ifname IF --dst-mac MAC [--src-mac MAC] --src-ip IP --dst-ip IP\n"
      "                      [--size BYTES] --rate PPS --duration S [--burst N] [--spin]\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  bool have_dst = false, have_src_ip = false, have_dst_ip = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--spin") {
      o.spin = true;
      continue;
    }
    if (!v) return false;
    ++i;
    if (a == "--ifname")
      o.ifname = v;
    else if (a == "--dst-mac") {
      auto m = parse_mac(v);
      if (!m) return false;
      o.dst_mac = *m;
      have_dst = true;
    } else if (a == "--src-mac") {
      o.src_mac = parse_mac(v);
      if (!o.src_mac) return false;
    } else if (a == "--src-ip")
      have_src_ip = parse_ip(v, o.src_ip);
    else if (a == "--dst-ip")
      have_dst_ip = parse_ip(v, o.dst_ip);
    else if (a == "--size")
      o.size = std::strtoul(v, nullptr, 10);
    else if (a == "--rate")
      o.rate = std::strtod(v, nullptr);
    else if (a == "--duration")
      o.duration = std::strtod(v, nullptr);
    else if (a == "--burst")
      o.burst = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    else
      return false;
  }
  return !o.ifname.empty() && have_dst && have_src_ip && have_dst_ip && o.rate > 0 &&
         o.duration > 0 && o.size >= 60 && o.size <= 9000;
}

int run(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return usage();

  sys::UniqueFd sock(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));  // protocol 0: send only
  if (!sock) {
    std::perror("xvb-paced-send: socket");
    return 1;
  }
  const int ifindex = static_cast<int>(if_nametoindex(o.ifname.c_str()));
  if (ifindex == 0) {
    std::fprintf(stderr, "xvb-paced-send: no interface %s\n", o.ifname.c_str());
    return 1;
  }
  if (!o.src_mac) {
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", o.ifname.c_str());
    if (ioctl(sock.get(), SIOCGIFHWADDR, &ifr) != 0) {
      std::perror("xvb-paced-send: SIOCGIFHWADDR");
      return 1;
    }
    MacAddress m{};
    std::memcpy(m.data(), ifr.ifr_hwaddr.sa_data, 6);
    o.src_mac = m;
  }
  const int one = 1;
  const bool bypass =
      setsockopt(sock.get(), SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) == 0;
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_ifindex = ifindex;
  addr.sll_protocol = htons(ETH_P_IP);
  addr.sll_halen = 6;
  std::memcpy(addr.sll_addr, o.dst_mac.data(), 6);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

  std::vector<std::uint8_t> frame = udp_frame(o);

  unsigned burst = o.burst;
  if (burst == 0) burst = static_cast<unsigned>(std::clamp(std::ceil(o.rate * 20e-6), 1.0, 64.0));
  burst = std::clamp(burst, 1u, 256u);
  std::vector<iovec> iov(burst, iovec{frame.data(), frame.size()});
  std::vector<mmsghdr> msgs(burst);
  for (unsigned i = 0; i < burst; ++i) {
    msgs[i].msg_hdr.msg_name = &addr;
    msgs[i].msg_hdr.msg_namelen = sizeof addr;
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }

  const auto total = static_cast<std::uint64_t>(std::llround(o.rate * o.duration));
  const double ns_per_frame = 1e9 / o.rate;
  std::uint64_t sent = 0, failed = 0, late = 0;
  const std::uint64_t start = now_ns() + 1000;
  while (sent + failed < total) {
    const std::uint64_t due =
        start + static_cast<std::uint64_t>(static_cast<double>(sent + failed) * ns_per_frame);
    if (now_ns() < due)
      sleep_until(due, o.spin);
    else if (now_ns() > due + 1'000'000)
      ++late;  // more than 1 ms behind schedule
    const auto want = static_cast<unsigned>(std::min<std::uint64_t>(burst, total - sent - failed));
    unsigned done = 0;
    int retries = 0;
    while (done < want) {
      const int n = sendmmsg(sock.get(), msgs.data() + done, want - done, 0);
      if (n > 0) {
        done += static_cast<unsigned>(n);
        continue;
      }
      if ((errno == ENOBUFS || errno == EAGAIN || errno == EINTR) && ++retries < 1000) continue;
      failed += want - done;
      break;
    }
    sent += done;
  }
  const std::uint64_t end = now_ns();
  const double elapsed = static_cast<double>(end - start) / 1e9;
  std::printf(
      "{\"sent\":%llu,\"failed\":%llu,\"offered_pps\":%.0f,\"achieved_pps\":%.0f,\"elapsed_s\":%."
      "6f,"
      "\"burst\":%u,\"late_bursts\":%llu,\"qdisc_bypass\":%s,\"frame_len\":%zu}\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(failed), o.rate,
      static_cast<double>(sent) / elapsed, elapsed, burst, static_cast<unsigned long long>(late),
      bypass ? "true" : "false", frame.size());
  return 0;
}

}  // namespace
}  // namespace xdpvhost::bench

int main(int argc, char** argv) {
  return xdpvhost::bench::run(argc, argv);
}

#include "udp_frame.hpp"

#include <cstdio>
#include <string>

#include "inet_checksum.hpp"

namespace xdpvhost::bench {
namespace {

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

void put32(std::uint8_t* p, std::uint32_t v) {
  put16(p, static_cast<std::uint16_t>(v >> 16));
  put16(p + 2, static_cast<std::uint16_t>(v));
}

}  // namespace

std::optional<Mac> parse_mac(std::string_view text) {
  Mac mac{};
  unsigned v[6];
  if (text.size() != 17) return std::nullopt;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) !=
      6)
    return std::nullopt;
  for (int i = 0; i < 6; ++i) mac[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v[i]);
  return mac;
}

std::vector<std::uint8_t> build_udp_frame(const UdpFrameSpec& spec) {
  constexpr std::size_t kEth = 14, kIp = 20, kUdp = 8;
  const std::size_t len = spec.frame_len < kEth + kIp + kUdp ? kEth + kIp + kUdp : spec.frame_len;
  std::vector<std::uint8_t> f(len, 0);
  std::uint8_t* p = f.data();
  for (std::size_t i = 0; i < 6; ++i) {
    p[i] = spec.dst_mac[i];
    p[6 + i] = spec.src_mac[i];
  }
  put16(p + 12, 0x0800);

  std::uint8_t* ip = p + kEth;
  const auto ip_total = static_cast<std::uint16_t>(len - kEth);
  ip[0] = 0x45;
  put16(ip + 2, ip_total);
  put16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = 17;
  put32(ip + 12, spec.src_ip);
  put32(ip + 16, spec.dst_ip);
  put16(ip + 10, checksum_fold(checksum_add(0, ip, kIp)));

  std::uint8_t* udp = ip + kIp;
  const auto udp_len = static_cast<std::uint16_t>(ip_total - kIp);
  put16(udp, spec.src_port);
  put16(udp + 2, spec.dst_port);
  put16(udp + 4, udp_len);
  for (std::size_t i = kUdp; i < udp_len; ++i) udp[i] = static_cast<std::uint8_t>(i);
  std::uint32_t sum = checksum_add(0, ip + 12, 8);  // pseudo header: addresses
  sum += 17u + udp_len;
  std::uint16_t c = checksum_fold(checksum_add(sum, udp, udp_len));
  put16(udp + 6, c == 0 ? 0xffff : c);
  return f;
}

}  // namespace xdpvhost::bench

#include "packet_view.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

namespace xdpvhost::uplink_test {

namespace {

std::uint16_t be16(std::span<const std::uint8_t> f, std::size_t off) {
  return static_cast<std::uint16_t>(f[off] << 8 | f[off + 1]);
}

template <std::size_t N>
std::array<std::uint8_t, N> bytes(std::span<const std::uint8_t> f, std::size_t off) {
  std::array<std::uint8_t, N> a{};
  std::copy_n(f.begin() + static_cast<std::ptrdiff_t>(off), N, a.begin());
  return a;
}

}  // namespace

PacketView PacketView::parse(std::span<const std::uint8_t> f) {
  PacketView v;
  if (f.size() < 14) return v;
  v.dst = bytes<6>(f, 0);
  v.src = bytes<6>(f, 6);
  v.ethertype = be16(f, 12);
  if (v.ethertype == testing::kEtherTypeArp && f.size() >= 14 + 28) {
    v.arp = true;
    v.arp_op = be16(f, 20);
    v.arp_sender_mac = bytes<6>(f, 22);
    v.arp_sender_ip = bytes<4>(f, 28);
    v.arp_target_mac = bytes<6>(f, 32);
    v.arp_target_ip = bytes<4>(f, 38);
    return v;
  }
  if (v.ethertype != testing::kEtherTypeIpv4 || f.size() < 14 + 20) return v;
  const std::size_t ihl = static_cast<std::size_t>(f[14] & 0x0f) * 4;
  const std::size_t total = be16(f, 16);
  if ((f[14] >> 4) != 4 || ihl < 20 || total < ihl || 14 + total > f.size()) return v;
  v.ipv4 = true;
  v.ip_protocol = f[23];
  v.ip_src = bytes<4>(f, 26);
  v.ip_dst = bytes<4>(f, 30);
  v.l4_offset = 14 + ihl;
  v.l4_len = total - ihl;
  const std::size_t l4 = v.l4_offset;
  if (v.ip_protocol == 1 && v.l4_len >= 8) {
    v.icmp = true;
    v.icmp_type = f[l4];
    v.icmp_id = be16(f, l4 + 4);
    v.icmp_seq = be16(f, l4 + 6);
    v.payload = f.subspan(l4 + 8, v.l4_len - 8);
  } else if (v.ip_protocol == 17 && v.l4_len >= 8) {
    v.udp = true;
    v.src_port = be16(f, l4);
    v.dst_port = be16(f, l4 + 2);
    v.l4_checksum = be16(f, l4 + 6);
    const std::size_t len = std::min<std::size_t>(be16(f, l4 + 4), v.l4_len);
    if (len >= 8) v.payload = f.subspan(l4 + 8, len - 8);
  } else if (v.ip_protocol == 6 && v.l4_len >= 20) {
    v.tcp = true;
    v.src_port = be16(f, l4);
    v.dst_port = be16(f, l4 + 2);
    v.tcp_flags = f[l4 + 13];
    v.l4_checksum = be16(f, l4 + 16);
    const std::size_t doff = static_cast<std::size_t>(f[l4 + 12] >> 4) * 4;
    if (doff >= 20 && doff <= v.l4_len) v.payload = f.subspan(l4 + doff, v.l4_len - doff);
  }
  return v;
}

MacAddress parse_mac_text(const std::string& text) {
  MacAddress m{};
  unsigned b[6] = {};
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6)
    for (int i = 0; i < 6; ++i) m[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(b[i]);
  return m;
}

Ipv4Address parse_ipv4_text(const std::string& text) {
  Ipv4Address a{};
  ::inet_pton(AF_INET, text.c_str(), a.data());
  return a;
}

std::string format_mac(const MacAddress& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

}  // namespace xdpvhost::uplink_test

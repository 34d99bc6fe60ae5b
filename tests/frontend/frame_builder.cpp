#include "frontend/frame_builder.hpp"

#include <algorithm>

#include "frontend/frame_checksum.hpp"

namespace xdpvhost::testing {
namespace {

void put16(std::vector<std::uint8_t>& v, std::uint16_t x) {
  v.push_back(static_cast<std::uint8_t>(x >> 8));
  v.push_back(static_cast<std::uint8_t>(x));
}
void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  put16(v, static_cast<std::uint16_t>(x >> 16));
  put16(v, static_cast<std::uint16_t>(x));
}
void set16(std::vector<std::uint8_t>& v, std::size_t off, std::uint16_t x) {
  v[off] = static_cast<std::uint8_t>(x >> 8);
  v[off + 1] = static_cast<std::uint8_t>(x);
}
template <class A>
void append(std::vector<std::uint8_t>& v, const A& a) {
  v.insert(v.end(), std::begin(a), std::end(a));
}

// IPv4 header (no options) followed by `l4`, header checksum filled in.
std::vector<std::uint8_t> ipv4_packet(const Ipv4Address& src, const Ipv4Address& dst,
                                      std::uint8_t protocol, std::uint8_t ttl, std::uint16_t id,
                                      std::span<const std::uint8_t> l4) {
  std::vector<std::uint8_t> p;
  p.reserve(20 + l4.size());
  p.push_back(0x45);
  p.push_back(0);
  put16(p, static_cast<std::uint16_t>(20 + l4.size()));
  put16(p, id);
  put16(p, 0x4000);  // DF
  p.push_back(ttl);
  p.push_back(protocol);
  put16(p, 0);
  append(p, src);
  append(p, dst);
  set16(p, 10, internet_checksum(std::span<const std::uint8_t>(p.data(), 20)));
  p.insert(p.end(), l4.begin(), l4.end());
  return p;
}

std::uint32_t pseudo_sum(const Ipv4Address& src, const Ipv4Address& dst, std::uint8_t protocol,
                         std::size_t l4_len) {
  std::uint32_t sum = checksum_partial(src);
  sum = checksum_partial(dst, sum);
  return sum + protocol + static_cast<std::uint32_t>(l4_len);
}

}  // namespace

MacAddress make_mac(std::uint16_t id) {
  return {
      0x02, 0x00, 0x00, 0x00, static_cast<std::uint8_t>(id >> 8), static_cast<std::uint8_t>(id)};
}

std::vector<std::uint8_t> build_ethernet(const MacAddress& dst, const MacAddress& src,
                                         std::uint16_t ethertype,
                                         std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> f;
  f.reserve(14 + payload.size());
  append(f, dst);
  append(f, src);
  put16(f, ethertype);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

std::vector<std::uint8_t> add_vlan_tag(std::span<const std::uint8_t> frame, std::uint16_t vlan_id,
                                       std::uint8_t priority) {
  std::vector<std::uint8_t> f(frame.begin(),
                              frame.begin() + std::min<std::size_t>(12, frame.size()));
  put16(f, kEtherTypeVlan);
  put16(f, static_cast<std::uint16_t>((priority << 13) | (vlan_id & 0x0fff)));
  if (frame.size() > 12) f.insert(f.end(), frame.begin() + 12, frame.end());
  return f;
}

std::vector<std::uint8_t> build_udp(const UdpFrameSpec& s) {
  std::vector<std::uint8_t> udp;
  udp.reserve(8 + s.payload.size());
  put16(udp, s.src_port);
  put16(udp, s.dst_port);
  put16(udp, static_cast<std::uint16_t>(8 + s.payload.size()));
  put16(udp, 0);
  append(udp, s.payload);
  if (s.udp_checksum) {
    std::uint16_t c = internet_checksum(udp, pseudo_sum(s.src_ip, s.dst_ip, 17, udp.size()));
    if (c == 0) c = 0xffff;
    set16(udp, 6, c);
  }
  return build_ethernet(s.dst_mac, s.src_mac, kEtherTypeIpv4,
                        ipv4_packet(s.src_ip, s.dst_ip, 17, s.ttl, s.ip_id, udp));
}

std::vector<std::uint8_t> build_tcp(const TcpFrameSpec& s) {
  std::vector<std::uint8_t> tcp;
  tcp.reserve(20 + s.payload.size());
  put16(tcp, s.src_port);
  put16(tcp, s.dst_port);
  put32(tcp, s.seq);
  put32(tcp, s.ack);
  tcp.push_back(0x50);  // data offset 5 words
  tcp.push_back(s.flags);
  put16(tcp, s.window);
  put16(tcp, 0);  // checksum
  put16(tcp, 0);  // urgent pointer
  append(tcp, s.payload);
  set16(tcp, 16, internet_checksum(tcp, pseudo_sum(s.src_ip, s.dst_ip, 6, tcp.size())));
  return build_ethernet(s.dst_mac, s.src_mac, kEtherTypeIpv4,
                        ipv4_packet(s.src_ip, s.dst_ip, 6, s.ttl, s.ip_id, tcp));
}

std::vector<std::uint8_t> build_icmp_echo(const IcmpEchoSpec& s) {
  std::vector<std::uint8_t> icmp;
  icmp.push_back(s.reply ? 0 : 8);
  icmp.push_back(0);
  put16(icmp, 0);
  put16(icmp, s.identifier);
  put16(icmp, s.sequence);
  append(icmp, s.payload);
  set16(icmp, 2, internet_checksum(icmp));
  return build_ethernet(s.dst_mac, s.src_mac, kEtherTypeIpv4,
                        ipv4_packet(s.src_ip, s.dst_ip, 1, s.ttl, s.sequence, icmp));
}

std::vector<std::uint8_t> build_arp(const ArpSpec& s) {
  std::vector<std::uint8_t> arp;
  put16(arp, 1);       // Ethernet
  put16(arp, 0x0800);  // IPv4
  arp.push_back(6);
  arp.push_back(4);
  put16(arp, s.reply ? 2 : 1);
  append(arp, s.sender_mac);
  append(arp, s.sender_ip);
  append(arp, s.target_mac);
  append(arp, s.target_ip);
  return build_ethernet(s.dst_mac, s.sender_mac, kEtherTypeArp, arp);
}

std::vector<std::uint8_t> payload_pattern(std::size_t len, std::uint32_t seed) {
  std::vector<std::uint8_t> p(len);
  std::uint32_t x = seed * 2654435761u + 0x9e3779b9u;
  for (auto& b : p) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return p;
}

MacAddress frame_dst_mac(std::span<const std::uint8_t> frame) {
  MacAddress m{};
  if (frame.size() >= 6) std::copy_n(frame.begin(), 6, m.begin());
  return m;
}

MacAddress frame_src_mac(std::span<const std::uint8_t> frame) {
  MacAddress m{};
  if (frame.size() >= 12) std::copy_n(frame.begin() + 6, 6, m.begin());
  return m;
}

std::uint16_t frame_ethertype(std::span<const std::uint8_t> frame) {
  if (frame.size() < 14) return 0;
  return static_cast<std::uint16_t>((frame[12] << 8) | frame[13]);
}

std::vector<std::uint8_t> swap_macs(std::span<const std::uint8_t> frame) {
  std::vector<std::uint8_t> f(frame.begin(), frame.end());
  if (f.size() >= 12) std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
  return f;
}

}  // namespace xdpvhost::testing

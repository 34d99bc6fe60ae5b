#include "test_packets.hpp"

namespace xdpvhost::net::testing {

std::uint16_t be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}
std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}
void put_be16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
void put_be32(std::uint8_t* p, std::uint32_t v) {
  put_be16(p, static_cast<std::uint16_t>(v >> 16));
  put_be16(p + 2, static_cast<std::uint16_t>(v));
}

std::uint32_t ref_sum(const std::uint8_t* p, std::size_t n, std::uint32_t sum) {
  std::uint64_t s = sum;
  for (std::size_t i = 0; i < n; ++i) s += (i % 2 == 0) ? std::uint32_t{p[i]} << 8 : p[i];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint32_t>(s);
}
std::uint16_t ref_fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

Bytes pattern(std::uint32_t n, std::uint32_t start) {
  Bytes b(n);
  for (std::uint32_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((start + i) % 251);
  return b;
}

Bytes timestamp_option(std::uint32_t tsval, std::uint32_t tsecr) {
  Bytes o{1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0};
  put_be32(&o[4], tsval);
  put_be32(&o[8], tsecr);
  return o;
}

Bytes build_frame(const PacketSpec& s) {
  Bytes f = {0x52, 0x54, 0x00, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0x00, 0x00, 0x01};
  if (s.vlan_tpid) {
    f.push_back(static_cast<std::uint8_t>(s.vlan_tpid >> 8));
    f.push_back(static_cast<std::uint8_t>(s.vlan_tpid));
    f.push_back(static_cast<std::uint8_t>(s.vlan_tci >> 8));
    f.push_back(static_cast<std::uint8_t>(s.vlan_tci));
  }
  f.push_back(s.ipv6 ? 0x86 : 0x08);
  f.push_back(s.ipv6 ? 0xdd : 0x00);
  Bytes l4;
  if (s.udp) {
    l4.resize(8);
    put_be16(&l4[0], s.sport);
    put_be16(&l4[2], s.dport);
    put_be16(&l4[4], static_cast<std::uint16_t>(8 + s.payload.size()));
  } else {
    l4.resize(20 + s.tcp_options.size());
    put_be16(&l4[0], s.sport);
    put_be16(&l4[2], s.dport);
    put_be32(&l4[4], s.seq);
    put_be32(&l4[8], s.ack);
    l4[12] = static_cast<std::uint8_t>((l4.size() / 4) << 4);
    l4[13] = s.flags;
    put_be16(&l4[14], s.window);
    std::copy(s.tcp_options.begin(), s.tcp_options.end(), l4.begin() + 20);
  }
  const std::uint8_t proto = s.udp ? 17 : 6;
  const std::size_t l4_len = l4.size() + s.payload.size();

  Bytes ip;
  Bytes addrs;
  if (!s.ipv6) {
    ip.resize(20 + s.ipv4_options.size());
    ip[0] = static_cast<std::uint8_t>(0x40 | (ip.size() / 4));
    ip[1] = s.tos;
    put_be16(&ip[2], static_cast<std::uint16_t>(ip.size() + l4_len));
    put_be16(&ip[4], s.ip_id);
    put_be16(&ip[6], static_cast<std::uint16_t>((s.df ? 0x4000 : 0) | s.frag));
    ip[8] = s.ttl;
    ip[9] = proto;
    const std::uint8_t a[8] = {10, 0, 0, s.src_last, 10, 0, 0, 2};
    std::copy(a, a + 8, ip.begin() + 12);
    std::copy(s.ipv4_options.begin(), s.ipv4_options.end(), ip.begin() + 20);
    put_be16(&ip[10], static_cast<std::uint16_t>(~ref_fold(ref_sum(ip.data(), ip.size()))));
    addrs.assign(ip.begin() + 12, ip.begin() + 20);
  } else {
    ip.resize(40 + s.ipv6_ext.size());
    ip[0] = static_cast<std::uint8_t>(0x60 | (s.tos >> 4));
    ip[1] = static_cast<std::uint8_t>((s.tos << 4) | ((s.flow_label >> 16) & 0xf));
    put_be16(&ip[2], static_cast<std::uint16_t>(s.flow_label));
    put_be16(&ip[4], static_cast<std::uint16_t>(s.ipv6_ext.size() + l4_len));
    ip[6] = s.ipv6_ext.empty() ? proto : s.ipv6_first_next;
    ip[7] = s.ttl;
    for (int i = 0; i < 16; ++i) ip[8 + i] = static_cast<std::uint8_t>(0x20 + i);
    for (int i = 0; i < 16; ++i) ip[24 + i] = static_cast<std::uint8_t>(0x40 + i);
    ip[23] = s.src_last;
    std::copy(s.ipv6_ext.begin(), s.ipv6_ext.end(), ip.begin() + 40);
    addrs.assign(ip.begin() + 8, ip.begin() + 40);
  }

  Bytes pseudo = addrs;
  pseudo.push_back(0);
  pseudo.push_back(proto);
  if (s.ipv6) pseudo.insert(pseudo.end(), {0, 0});
  pseudo.push_back(static_cast<std::uint8_t>(l4_len >> 8));
  pseudo.push_back(static_cast<std::uint8_t>(l4_len));
  const std::uint32_t psum = ref_sum(pseudo.data(), pseudo.size());
  const std::size_t field = s.udp ? 6 : 16;
  if (s.csum == L4Checksum::full) {
    Bytes whole = l4;
    whole.insert(whole.end(), s.payload.begin(), s.payload.end());
    std::uint16_t c =
        static_cast<std::uint16_t>(~ref_fold(ref_sum(whole.data(), whole.size(), psum)));
    if (s.udp && c == 0) c = 0xffff;
    put_be16(&l4[field], c);
  } else if (s.csum == L4Checksum::partial) {
    put_be16(&l4[field], ref_fold(psum));
  }
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), l4.begin(), l4.end());
  f.insert(f.end(), s.payload.begin(), s.payload.end());
  f.resize(f.size() + s.padding, 0);
  return f;
}

RefLayout ref_layout(const Bytes& f) {
  RefLayout l;
  l.l3 = 14;
  std::uint16_t type = be16(&f[12]);
  if (type == 0x8100 || type == 0x88a8) {
    l.l3 = 18;
    type = be16(&f[16]);
  }
  l.ipv6 = type == 0x86dd;
  if (l.ipv6) {
    l.l4 = l.l3 + 40;
    l.end = l.l4 + be16(&f[l.l3 + 4]);
    l.proto = f[l.l3 + 6];
  } else {
    l.l4 = l.l3 + (f[l.l3] & 0xf) * 4u;
    l.end = l.l3 + be16(&f[l.l3 + 2]);
    l.proto = f[l.l3 + 9];
  }
  return l;
}

std::uint32_t ref_pseudo(const Bytes& f, const RefLayout& l, std::size_t l4_len) {
  std::uint32_t sum = l.ipv6 ? ref_sum(&f[l.l3 + 8], 32) : ref_sum(&f[l.l3 + 12], 8);
  const std::uint8_t tail[4] = {0, l.proto, static_cast<std::uint8_t>(l4_len >> 8),
                                static_cast<std::uint8_t>(l4_len)};
  sum = ref_sum(tail, 4, sum);
  if (l4_len >> 16) sum = ref_fold(sum + static_cast<std::uint32_t>(l4_len >> 16));
  return sum;
}

bool ref_ipv4_header_ok(const Bytes& f) {
  const RefLayout l = ref_layout(f);
  if (l.ipv6) return true;
  return ref_fold(ref_sum(&f[l.l3], l.l4 - l.l3)) == 0xffff;
}

bool ref_l4_checksum_ok(const Bytes& f) {
  const RefLayout l = ref_layout(f);
  const std::size_t n = l.end - l.l4;
  return ref_fold(ref_sum(&f[l.l4], n, ref_pseudo(f, l, n))) == 0xffff;
}

std::uint16_t ref_partial_value(const Bytes& f) {
  const RefLayout l = ref_layout(f);
  return ref_fold(ref_pseudo(f, l, l.end - l.l4));
}

void ref_complete(Bytes& f, std::size_t start, std::size_t offset) {
  const RefLayout l = ref_layout(f);
  std::uint16_t c = static_cast<std::uint16_t>(~ref_fold(ref_sum(&f[start], l.end - start)));
  if (c == 0) c = 0xffff;
  put_be16(&f[start + offset], c);
}

}  // namespace xdpvhost::net::testing

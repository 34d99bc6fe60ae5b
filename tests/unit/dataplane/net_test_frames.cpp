// Frame builders for the datapath tests, with a byte-wise checksum written
// independently of lib/dataplane/checksum.cpp.

#include <cstring>

#include "net_test_guest.hpp"

namespace xdpvhost::dataplane::test {
namespace {

std::uint32_t sum16(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0) {
  for (std::size_t i = 0; i + 1 < n; i += 2)
    sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) sum += static_cast<std::uint32_t>(p[n - 1] << 8);
  return sum;
}
std::uint16_t fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}
std::uint32_t pseudo_header(const std::uint8_t* ip, std::size_t l4_len, std::uint8_t proto = 17) {
  std::uint32_t sum = sum16(ip + 12, 8);  // source and destination address
  sum += proto;
  sum += static_cast<std::uint32_t>(l4_len);
  return sum;
}
void put16(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
std::uint32_t get32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

}  // namespace

std::vector<std::uint8_t> udp_frame(const std::uint8_t dst[6], const std::uint8_t src[6],
                                    std::size_t payload, bool partial_checksum) {
  std::vector<std::uint8_t> f(14 + 20 + 8 + payload);
  std::memcpy(f.data(), dst, 6);
  std::memcpy(f.data() + 6, src, 6);
  f[12] = 0x08;
  f[13] = 0x00;
  std::uint8_t* ip = f.data() + 14;
  const std::size_t ip_len = 20 + 8 + payload;
  ip[0] = 0x45;
  ip[2] = static_cast<std::uint8_t>(ip_len >> 8);
  ip[3] = static_cast<std::uint8_t>(ip_len);
  ip[8] = 64;
  ip[9] = 17;
  const std::uint8_t saddr[4] = {10, 0, 0, 1}, daddr[4] = {10, 0, 0, 2};
  std::memcpy(ip + 12, saddr, 4);
  std::memcpy(ip + 16, daddr, 4);
  const std::uint16_t ip_csum = static_cast<std::uint16_t>(~fold(sum16(ip, 20)));
  ip[10] = static_cast<std::uint8_t>(ip_csum >> 8);
  ip[11] = static_cast<std::uint8_t>(ip_csum);
  std::uint8_t* udp = ip + 20;
  udp[0] = 0x30;
  udp[1] = 0x39;  // 12345
  udp[2] = 0x10;
  udp[3] = 0x92;  // 4242
  const std::size_t udp_len = 8 + payload;
  udp[4] = static_cast<std::uint8_t>(udp_len >> 8);
  udp[5] = static_cast<std::uint8_t>(udp_len);
  for (std::size_t i = 0; i < payload; ++i) udp[8 + i] = static_cast<std::uint8_t>(i * 7 + 3);
  std::uint16_t csum;
  if (partial_checksum) {
    csum = fold(pseudo_header(ip, udp_len));  // not complemented, as Linux leaves it
  } else {
    csum = static_cast<std::uint16_t>(~fold(sum16(udp, udp_len, pseudo_header(ip, udp_len))));
    if (csum == 0) csum = 0xffff;
  }
  udp[6] = static_cast<std::uint8_t>(csum >> 8);
  udp[7] = static_cast<std::uint8_t>(csum);
  return f;
}

bool udp_checksum_ok(const std::vector<std::uint8_t>& f) {
  const std::uint8_t* ip = f.data() + 14;
  const std::size_t udp_len = f.size() - 34;
  return fold(sum16(ip + 20, udp_len, pseudo_header(ip, udp_len))) == 0xffff;
}

std::vector<std::uint8_t> tcp_frame(const std::uint8_t dst[6], const std::uint8_t src[6],
                                    std::size_t payload, std::uint32_t seq, std::uint8_t flags) {
  std::vector<std::uint8_t> f(14 + 20 + 20 + payload);
  std::memcpy(f.data(), dst, 6);
  std::memcpy(f.data() + 6, src, 6);
  f[12] = 0x08;
  f[13] = 0x00;
  std::uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  put16(ip + 2, static_cast<std::uint32_t>(20 + 20 + payload));
  put16(ip + 4, 0x1234);  // id
  ip[6] = 0x40;           // DF
  ip[8] = 64;
  ip[9] = 6;
  const std::uint8_t saddr[4] = {10, 0, 0, 1}, daddr[4] = {10, 0, 0, 2};
  std::memcpy(ip + 12, saddr, 4);
  std::memcpy(ip + 16, daddr, 4);
  put16(ip + 10, static_cast<std::uint16_t>(~fold(sum16(ip, 20))));
  std::uint8_t* tcp = ip + 20;
  put16(tcp, 40000);
  put16(tcp + 2, 5201);
  put16(tcp + 4, seq >> 16);
  put16(tcp + 6, seq);
  put16(tcp + 8, 0);
  put16(tcp + 10, 1);  // ack 1
  tcp[12] = 5 << 4;
  tcp[13] = flags;
  put16(tcp + 14, 64240);
  for (std::size_t i = 0; i < payload; ++i) tcp[20 + i] = static_cast<std::uint8_t>(i * 13 + 5);
  // Only the pseudo-header sum, as a guest leaves it with NEEDS_CSUM.
  put16(tcp + 16, fold(pseudo_header(ip, 20 + payload, 6)));
  return f;
}

bool tcp_checksums_ok(const std::vector<std::uint8_t>& f) {
  const std::uint8_t* ip = f.data() + 14;
  const std::size_t l4_len = f.size() - 34;
  return fold(sum16(ip, 20)) == 0xffff &&
         (static_cast<std::size_t>(ip[2] << 8 | ip[3]) == f.size() - 14) &&
         fold(sum16(ip + 20, l4_len, pseudo_header(ip, l4_len, 6))) == 0xffff;
}

std::uint32_t tcp_seq(const std::vector<std::uint8_t>& f) {
  return get32(f.data() + 34 + 4);
}

}  // namespace xdpvhost::dataplane::test

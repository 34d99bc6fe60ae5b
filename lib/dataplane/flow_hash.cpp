#include "dataplane/flow_hash.hpp"

#include "net/byte_order.hpp"
#include "net/ethernet.hpp"
#include "net/packet_headers.hpp"

namespace xdpvhost::dataplane {

namespace {

using net::kEtherTypeIpv4;
using net::kEtherTypeIpv6;
using net::kEtherTypeQinQ;
using net::kEtherTypeVlan;
constexpr std::uint8_t kIpProtoSctp = 132;

// Ethernet + one tag + IPv6 header + the ports: all a hash reads.
constexpr std::uint32_t kHashBytes = net::kEthernetHeader + 4 + net::kIpv6Header + 4;

class Fnv {
 public:
  void mix(const std::uint8_t* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 16777619u;
  }
  // murmur3's fmix32: FNV's low bits depend on few input bits, and the
  // choice of group and queue takes both halves.
  std::uint32_t finish() const noexcept {
    std::uint32_t h = h_;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
  }

 private:
  std::uint32_t h_ = 2166136261u;
};

bool has_ports(std::uint8_t protocol) noexcept {
  return protocol == net::kIpProtoTcp || protocol == net::kIpProtoUdp || protocol == kIpProtoSctp;
}

}  // namespace

std::uint32_t hash_flow(const Frame& frame) noexcept {
  if (!frame.has_ethernet_header()) return 0;
  std::uint8_t b[kHashBytes];
  const std::uint32_t n = gather(frame, 0, b, kHashBytes);
  Fnv h;
  std::uint32_t l3 = net::kEthernetHeader;
  std::uint16_t type = net::load_be16(b + 12);
  if ((type == kEtherTypeVlan || type == kEtherTypeQinQ) && n >= l3 + 4) {
    type = net::load_be16(b + 16);
    l3 += 4;
  }
  if (type == kEtherTypeIpv4 && n >= l3 + net::kIpv4MinHeader && (b[l3] >> 4) == 4) {
    const std::uint32_t ihl = (b[l3] & 0x0fu) * 4u;
    const std::uint8_t protocol = b[l3 + 9];
    const bool fragment = (net::load_be16(b + l3 + 6) & 0x3fffu) != 0;  // MF or an offset
    h.mix(&protocol, 1);
    h.mix(b + l3 + 12, 8);  // source and destination address
    if (!fragment && has_ports(protocol) && ihl >= net::kIpv4MinHeader) {
      // Options may push the ports past what was gathered: read them apart.
      std::uint8_t ports[4];
      if (gather(frame, l3 + ihl, ports, 4) == 4) h.mix(ports, 4);
    }
    return h.finish();
  }
  if (type == kEtherTypeIpv6 && n >= l3 + net::kIpv6Header && (b[l3] >> 4) == 6) {
    const std::uint8_t next = b[l3 + 6];
    h.mix(&next, 1);
    h.mix(b + l3 + 8, 32);  // source and destination address
    // Ports only right behind the fixed header: with extension headers in
    // between a flow hashes by its addresses (still stable).
    if (has_ports(next) && n >= l3 + net::kIpv6Header + 4) h.mix(b + l3 + net::kIpv6Header, 4);
    return h.finish();
  }
  h.mix(b, 12);  // not IP: the MAC addresses and the EtherType
  const std::uint8_t t[2] = {static_cast<std::uint8_t>(type >> 8), static_cast<std::uint8_t>(type)};
  h.mix(t, 2);
  return h.finish();
}

}  // namespace xdpvhost::dataplane

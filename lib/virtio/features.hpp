#pragma once
// Virtio and virtio-net feature bits (virtio 1.2, section 5.1.3 and 6).

#include <cstdint>

namespace xdpvhost::virtio {

enum class Feature : unsigned {
  kNetCsum = 0,       // device handles packets with partial checksum (guest TX)
  kNetGuestCsum = 1,  // driver handles packets with partial checksum (guest RX)
  kNetMtu = 3,
  kNetMac = 5,
  kNetGuestTso4 = 7,
  kNetGuestTso6 = 8,
  kNetGuestEcn = 9,
  kNetGuestUfo = 10,
  kNetHostTso4 = 11,
  kNetHostTso6 = 12,
  kNetHostEcn = 13,
  kNetHostUfo = 14,
  kNetMrgRxbuf = 15,
  kNetStatus = 16,
  kNetCtrlVq = 17,
  kNetCtrlRx = 18,
  kNetCtrlVlan = 19,
  kNetGuestAnnounce = 21,
  kNetMq = 22,
  kNotifyOnEmpty = 24,
  kLogAll = 26,  // VHOST_F_LOG_ALL: the backend marks its writes in the dirty log (migration)
  kAnyLayout = 27,
  kRingIndirectDesc = 28,
  kRingEventIdx = 29,
  kVhostUserProtocolFeatures = 30,  // vhost-user only: protocol feature negotiation
  kVersion1 = 32,
  kRingPacked = 34,
  kNetGuestUso4 = 54,  // driver takes USO frames over IPv4 (GSO type UDP_L4)
  kNetGuestUso6 = 55,
  kNetHostUso = 56,  // device takes USO frames from the driver
};

constexpr std::uint64_t bit(Feature f) {
  return std::uint64_t{1} << static_cast<unsigned>(f);
}

constexpr bool has(std::uint64_t features, Feature f) {
  return (features & bit(f)) != 0;
}

}  // namespace xdpvhost::virtio

#pragma once
// Options of the test frontend: how it connects, how big its guest RAM is,
// and what a negotiation accepts.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "frontend/guest_memory_arena.hpp"
#include "frontend/vhost_user_protocol.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::testing {

// Which end of the unix socket the frontend is.
enum class Role {
  kClient,  // the backend listens; we connect (QEMU's default)
  kServer,  // we listen; the backend connects (QEMU "server" mode, KubeVirt)
};

// What a Linux guest's virtio-net driver accepts with QEMU's default device
// options, plus the vhost-user PROTOCOL_FEATURES bit (kept when offered).
// Never includes a feature the frontend cannot honour (CTRL_VQ, IOMMU, packed).
constexpr std::uint64_t kLinuxGuestFeatures =
    virtio::bit(virtio::Feature::kNetCsum) | virtio::bit(virtio::Feature::kNetGuestCsum) |
    virtio::bit(virtio::Feature::kNetMtu) | virtio::bit(virtio::Feature::kNetGuestTso4) |
    virtio::bit(virtio::Feature::kNetGuestTso6) | virtio::bit(virtio::Feature::kNetGuestEcn) |
    virtio::bit(virtio::Feature::kNetGuestUfo) | virtio::bit(virtio::Feature::kNetHostTso4) |
    virtio::bit(virtio::Feature::kNetHostTso6) | virtio::bit(virtio::Feature::kNetHostEcn) |
    virtio::bit(virtio::Feature::kNetHostUfo) | virtio::bit(virtio::Feature::kNetMrgRxbuf) |
    virtio::bit(virtio::Feature::kNetMq) | virtio::bit(virtio::Feature::kRingIndirectDesc) |
    virtio::bit(virtio::Feature::kRingEventIdx) | virtio::bit(virtio::Feature::kVersion1) |
    virtio::bit(virtio::Feature::kVhostUserProtocolFeatures);

// What QEMU 7.2 accepts for a vhost-user-net device: every protocol feature
// it knows except CONFIG (dropped for net) and, here, INBAND_NOTIFICATIONS
// (this frontend kicks through eventfds only).
constexpr std::uint64_t kQemuProtocolFeatures =
    vhost_user::bit(vhost_user::ProtocolFeature::kMq) |
    vhost_user::bit(vhost_user::ProtocolFeature::kLogShmfd) |
    vhost_user::bit(vhost_user::ProtocolFeature::kRarp) |
    vhost_user::bit(vhost_user::ProtocolFeature::kReplyAck) |
    vhost_user::bit(vhost_user::ProtocolFeature::kNetMtu) |
    vhost_user::bit(vhost_user::ProtocolFeature::kBackendReq) |
    vhost_user::bit(vhost_user::ProtocolFeature::kCrossEndian) |
    vhost_user::bit(vhost_user::ProtocolFeature::kCryptoSession) |
    vhost_user::bit(vhost_user::ProtocolFeature::kPagefault) |
    vhost_user::bit(vhost_user::ProtocolFeature::kBackendSendFd) |
    vhost_user::bit(vhost_user::ProtocolFeature::kHostNotifier) |
    vhost_user::bit(vhost_user::ProtocolFeature::kInflightShmfd) |
    vhost_user::bit(vhost_user::ProtocolFeature::kResetDevice) |
    vhost_user::bit(vhost_user::ProtocolFeature::kConfigureMemSlots) |
    vhost_user::bit(vhost_user::ProtocolFeature::kStatus);

struct FrontendOptions {
  std::string socket_path;
  Role role = Role::kClient;
  ArenaOptions memory{};
  // Bound for connect/accept and for every reply.
  std::chrono::milliseconds timeout{10000};
};

struct NegotiateOptions {
  // Virtio features accepted when the backend offers them.
  std::uint64_t accept_features = kLinuxGuestFeatures;
  // Protocol features accepted when the backend offers them.
  std::uint64_t accept_protocol_features = kQemuProtocolFeatures;
  std::uint16_t queue_pairs = 1;
  std::uint16_t queue_size = 256;
  // Shortcuts that clear the bit from accept_features when false.
  bool event_idx = true;
  bool indirect = true;
  bool mrg_rxbuf = true;
  // Sent with NET_SET_MTU when VIRTIO_NET_F_MTU and the NET_MTU protocol
  // feature were negotiated.
  std::optional<std::uint16_t> mtu;
  // need_reply on every request without a reply of its own (REPLY_ACK only).
  bool ack_all = false;
  // Bytes of guest memory per RX/TX chain (frame + header + gaps).
  std::uint32_t buffer_slot_size = 16384;
  std::uint32_t indirect_capacity = 32;
};

}  // namespace xdpvhost::testing

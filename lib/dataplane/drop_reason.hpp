#pragma once
// Every reason the datapath drops a frame. Each drop increments exactly one
// counter named here, on the port where the frame was dropped.

#include <cstddef>
#include <cstdint>

namespace xdpvhost::dataplane {

enum class DropReason : std::uint8_t {
  kNoRxBuffer,          // the guest had no receive buffer posted
  kRxBufferTooSmall,    // the buffers (or the ring, for a frame segmented here) too small for it
  kQueueBroken,         // the queue broke on a malformed ring (see the port's queue error)
  kPortNotReady,        // the destination port has no running receive queue
  kUnknownDestination,  // unicast to a MAC no port owns and no uplink to send it to
  kOversize,            // longer than the MTU the port was configured or told
  kMalformed,           // shorter than an Ethernet header
  kBadOffload,          // a virtio-net header whose GSO/checksum request the frame contradicts
  kHairpin,             // destination is the port it came from
  kMailboxFull,         // the service thread owning the destination was too far behind
  kPortGone,            // the destination port was removed while the frame was in flight
  kUplinkDown,          // the uplink interface is down or gone
  kUplinkTxFull,        // no room on the AF_XDP TX ring (flooded frames only; unicast waits)
  kSpoofedSource,       // a guest sent from a source MAC its port may not use (port security)
  kFloodLimited,        // broadcast/multicast beyond the port's flood_rate
  kUplinkRefused,       // the interface dropped a frame the socket handed it (copy mode:
                        // sendto's EBUSY, NET_XMIT_DROP; e.g. longer than a veth peer takes);
                        // it left the daemon, so it is in tx_packets too
  kMailboxShare,        // a GSO frame for another thread's guest that would take more of the
                        // mailbox as segments than one frame may (Mailbox::kMaxShare)
  kCount
};

inline constexpr std::size_t kDropReasons = static_cast<std::size_t>(DropReason::kCount);

constexpr const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::kNoRxBuffer:
      return "no_rx_buffer";
    case DropReason::kRxBufferTooSmall:
      return "rx_buffer_too_small";
    case DropReason::kQueueBroken:
      return "queue_broken";
    case DropReason::kPortNotReady:
      return "port_not_ready";
    case DropReason::kUnknownDestination:
      return "unknown_destination";
    case DropReason::kOversize:
      return "oversize";
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kBadOffload:
      return "bad_offload";
    case DropReason::kHairpin:
      return "hairpin";
    case DropReason::kMailboxFull:
      return "mailbox_full";
    case DropReason::kPortGone:
      return "port_gone";
    case DropReason::kUplinkDown:
      return "uplink_down";
    case DropReason::kUplinkTxFull:
      return "uplink_tx_full";
    case DropReason::kSpoofedSource:
      return "spoofed_source";
    case DropReason::kFloodLimited:
      return "flood_limited";
    case DropReason::kUplinkRefused:
      return "uplink_refused";
    case DropReason::kMailboxShare:
      return "mailbox_share";
    case DropReason::kCount:
      break;
  }
  return "unknown";
}

}  // namespace xdpvhost::dataplane

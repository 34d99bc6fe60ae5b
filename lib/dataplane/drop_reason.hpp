#pragma once
// Every reason the datapath drops a frame. Each drop increments exactly one
// counter named here, on the port where the frame was dropped.

#include <cstddef>
#include <cstdint>

#include "sys/enum_names.hpp"

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
  kMailboxFull,         // a flooded frame for another thread whose mailbox was full (unicast waits)
  kPortGone,            // the destination port was removed while the frame was in flight
  kUplinkDown,          // the uplink interface is down or gone
  kUplinkTxFull,        // no room on the AF_XDP TX ring (flooded frames only; unicast waits)
  kSpoofedSource,       // a guest sent from a source MAC its port may not use (port security)
  kFloodLimited,        // broadcast/multicast beyond the port's flood_rate
  kUplinkRefused,       // the interface dropped a frame the socket handed it (copy mode:
                        // sendto's EBUSY, NET_XMIT_DROP; e.g. longer than a veth peer takes);
                        // it left the daemon, so it is in tx_packets too
  kCount
};

inline constexpr std::size_t kDropReasons = static_cast<std::size_t>(DropReason::kCount);

inline constexpr sys::EnumNames<DropReason, 16> kDropReasonNames{{
    {DropReason::kNoRxBuffer, "no_rx_buffer"},
    {DropReason::kRxBufferTooSmall, "rx_buffer_too_small"},
    {DropReason::kQueueBroken, "queue_broken"},
    {DropReason::kPortNotReady, "port_not_ready"},
    {DropReason::kUnknownDestination, "unknown_destination"},
    {DropReason::kOversize, "oversize"},
    {DropReason::kMalformed, "malformed"},
    {DropReason::kBadOffload, "bad_offload"},
    {DropReason::kHairpin, "hairpin"},
    {DropReason::kMailboxFull, "mailbox_full"},
    {DropReason::kPortGone, "port_gone"},
    {DropReason::kUplinkDown, "uplink_down"},
    {DropReason::kUplinkTxFull, "uplink_tx_full"},
    {DropReason::kSpoofedSource, "spoofed_source"},
    {DropReason::kFloodLimited, "flood_limited"},
    {DropReason::kUplinkRefused, "uplink_refused"},
}};
static_assert(sys::in_enum_order(kDropReasonNames, kDropReasons));

constexpr const char* to_string(DropReason r) {
  return sys::name_of(kDropReasonNames, r);
}

}  // namespace xdpvhost::dataplane

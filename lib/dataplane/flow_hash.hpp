#pragma once
// Which receive queue of a multi-queue guest a frame from the switch goes to.
//
// flow_hash() hashes the frame's 5-tuple (IPv4 or IPv6 behind at most one
// VLAN tag: protocol, addresses and, for TCP/UDP/SCTP outside fragments, the
// ports), or its MAC addresses and EtherType when it is not IP. Every frame
// of a flow hashes alike, so a flow stays on one pair while the set of
// enabled pairs does not change; fragments of a datagram hash without ports,
// so they stay together too.
//
// A port's pairs may live on several service threads (queue groups, see
// lib/dataplane/README.md): the low half of the hash picks the group, the
// high half the pair within it, so the two choices are independent and the
// flows spread evenly over all enabled pairs.

#include <cstddef>
#include <cstdint>

#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

// The hash of the frame's flow (see above); 0 for a frame without an
// Ethernet header. Computed once per frame: later calls read what the first
// one kept in the frame.
std::uint32_t hash_flow(const Frame& frame) noexcept;
inline std::uint32_t flow_hash(const Frame& frame) noexcept {
  if (!frame.flow_hash_known) {
    frame.flow_hash_value = hash_flow(frame);
    frame.flow_hash_known = true;
  }
  return frame.flow_hash_value;
}

// Of `n` (> 0) queue groups, the one that takes the flow.
constexpr std::size_t group_for_flow(std::uint32_t hash, std::size_t n) noexcept {
  return (hash & 0xffffu) % n;
}
// Of `n` (> 0) enabled receive queues within a group, the one that takes it.
constexpr std::size_t queue_for_flow(std::uint32_t hash, std::size_t n) noexcept {
  return (hash >> 16) % n;
}

}  // namespace xdpvhost::dataplane

#pragma once
// Internet checksums for test frames: compute, verify a whole Ethernet frame
// (IPv4 header, UDP/TCP/ICMP), turn a complete frame into a NEEDS_CSUM one
// (what a guest with CSUM offload sends) and complete a partial checksum (what
// the device must do before the frame leaves).

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "virtio/net_header.hpp"

namespace xdpvhost::testing {

// One's complement sum of 16-bit big-endian words, not folded, not inverted.
std::uint32_t checksum_partial(std::span<const std::uint8_t> bytes, std::uint32_t sum = 0);
// Folded and inverted: the value to store in a checksum field (network order
// as a host integer, e.g. 0x220d for the RFC 1071 example).
std::uint16_t checksum_finish(std::uint32_t sum);
std::uint16_t internet_checksum(std::span<const std::uint8_t> bytes, std::uint32_t sum = 0);

struct ChecksumReport {
  bool is_ipv4 = false;
  bool ipv4_header_ok = false;
  std::uint8_t l4_protocol = 0;  // 1 ICMP, 6 TCP, 17 UDP, 0 none
  bool l4_ok = false;            // true also when the frame has no checked L4
  bool udp_checksum_absent = false;
  std::string problem;  // empty when everything checks out

  bool ok() const noexcept { return problem.empty(); }
};

// Verifies every checksum the frame carries. Non-IPv4 frames (ARP, ...) are
// ok; so is UDP with checksum 0 (absent), flagged in udp_checksum_absent.
ChecksumReport verify_checksums(std::span<const std::uint8_t> frame);

// Replaces the L4 checksum of a complete IPv4 UDP/TCP frame with the folded
// pseudo-header sum and returns the matching header (NEEDS_CSUM, csum_start =
// start of L4, csum_offset = 6 for UDP / 16 for TCP). nullopt for other frames.
std::optional<virtio::NetHeader> make_checksum_partial(std::span<std::uint8_t> frame);

// Device side of NEEDS_CSUM: checksum from csum_start to the end, stored at
// csum_start + csum_offset. false if the offsets do not fit the frame.
bool complete_partial_checksum(std::span<std::uint8_t> frame, std::uint16_t csum_start,
                               std::uint16_t csum_offset);

}  // namespace xdpvhost::testing

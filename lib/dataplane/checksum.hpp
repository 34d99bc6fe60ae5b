#pragma once
// Internet checksum (RFC 1071) over scattered bytes, and completion of a
// partial L4 checksum the way a NIC would (virtio-net NEEDS_CSUM).

#include <cstdint>

#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

// Ones-complement sum of [offset, offset+len) of the frame, not folded.
// `offset` must be even relative to the start of the summed range.
std::uint64_t checksum_add(const Frame& frame, std::uint32_t offset, std::uint32_t len) noexcept;

// Ones-complement sum of a contiguous buffer, not folded.
std::uint64_t checksum_add(const std::uint8_t* data, std::uint32_t len,
                           std::uint64_t sum = 0) noexcept;

std::uint16_t checksum_fold(std::uint64_t sum) noexcept;

// The value to store at csum_start + csum_offset so the frame carries a full
// checksum: ~fold(sum of [csum_start, len)), with the pseudo-header sum the
// sender left in the field included. False if the offsets are out of range.
bool complete_checksum(const Frame& frame, std::uint16_t& value) noexcept;

}  // namespace xdpvhost::dataplane

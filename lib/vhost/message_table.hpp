#pragma once
// Every vhost-user request this backend knows, in one table: its name, the
// payload it must carry, the fds that come with it, and its handler.

#include <cstdint>
#include <string>

#include "vhost/device.hpp"
#include "vhost/message.hpp"

namespace xdpvhost::vhost {

enum class PayloadRule : std::uint8_t {
  kAny,           // ignored (requests without arguments)
  kU64,           // exactly 8 bytes
  kVringState,    // struct VringState
  kVringAddress,  // struct VringAddress
  kMemoryTable,   // MemoryTableHeader + nregions * MemoryRegionDesc
  kLog,           // struct LogDescription
};

enum class FdRule : std::uint8_t {
  kNone,           // fds that come along are closed
  kOne,            // exactly one
  kOneUnlessNoFd,  // one eventfd, unless bit 8 of the u64 payload is set (kick/call/err);
                   // it is made non-blocking, so no write or read of ours can block
  kOnePerRegion,   // nregions (SET_MEM_TABLE)
};

// Requests the frontend waits on with a reply of its own (not a REPLY_ACK):
// even refused, they are answered, or the frontend would block forever.
inline constexpr std::uint32_t kReplyNone = 0;
inline constexpr std::uint32_t kReplySameSizeAsRequest = 0xffffffff;
// A header without payload (SET_LOG_BASE, under LOG_SHMFD only).
inline constexpr std::uint32_t kReplyEmpty = 0xfffffffe;

struct MessageSpec {
  Request request;
  const char* name;
  PayloadRule payload;
  FdRule fds;
  Outcome (Device::*handler)(Message&);
  std::uint32_t reply_bytes = kReplyNone;  // size of the reply a refusal still gets (zeros)
};

// The spec for `request`, or nullptr if the request is unknown.
const MessageSpec* find_message_spec(std::uint32_t request) noexcept;

// Name for logs ("SET_VRING_KICK", or "UNKNOWN(77)").
std::string request_name(std::uint32_t request);

// Checks size and fds against the spec; returns an empty string or why not.
std::string check_message(const MessageSpec& spec, const Message& message);

}  // namespace xdpvhost::vhost

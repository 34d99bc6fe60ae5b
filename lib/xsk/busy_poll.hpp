#pragma once
// Busy polling the NIC's NAPI context (docs/techniques.md) on an AF_XDP socket: which NAPI context
// feeds it (SO_INCOMING_NAPI_ID) and busy polling of that context from the service thread
// (SO_BUSY_POLL, SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET), applied all-or-nothing: every option is
// read back after it is set, and if one is refused or reads back different, all are restored and
// the reason is returned. drive_napi() is the recvfrom() the service thread issues while its rings
// are empty.
//
// Kernel rules (net/core/sock.c): raising SO_BUSY_POLL_BUDGET above the
// current value and enabling SO_PREFER_BUSY_POLL need CAP_NET_ADMIN;
// lowering never does. Raising SO_BUSY_POLL needed it too on older kernels,
// not on 6.18 (checked). So a restore that would raise a value can itself be
// refused; the option is then turned off (0), which is always allowed, and
// the reason says so.
//
// The kernel has no getsockopt for SO_BUSY_POLL_BUDGET (ENOPROTOOPT, checked
// on 6.18), so the budget is verified by setsockopt's result only, and a
// rollback returns it to 0 (the kernel default, BUSY_POLL_BUDGET = 8).
//
// Busy polling needs a valid NAPI id on the socket: the kernel busy-polls
// the NAPI context that id names and does nothing for id 0 (veth, where
// read_napi_id() reports 0). apply_busy_poll() still sets the options there
// but reports napi_id = 0, and drive_napi() is then a wasted syscall.

#include <cstdint>
#include <string>

namespace xdpvhost::xsk {

struct BusyPollConfig {
  std::uint32_t usecs = 0;   // SO_BUSY_POLL: busy-poll time per syscall; 0 = off
  std::uint16_t budget = 0;  // SO_BUSY_POLL_BUDGET: packets per poll; 0 = kernel default (8)
  bool prefer = false;       // SO_PREFER_BUSY_POLL: let the app's polls replace softirq work
};

// The options as the kernel reports them (SO_BUSY_POLL_BUDGET cannot be
// read back; see above).
struct BusyPollSettings {
  std::uint32_t usecs = 0;
  bool prefer = false;
  bool operator==(const BusyPollSettings&) const = default;
};

struct BusyPollOutcome {
  bool applied = false;        // all three set (usecs and prefer read back equal)
  BusyPollSettings in_effect;  // read back after applying or rolling back
  std::uint32_t budget = 0;    // the budget in effect as far as we know
  std::uint32_t napi_id = 0;   // SO_INCOMING_NAPI_ID at the time; 0 = busy polling is inert
  std::string reason;          // why it was not applied (empty when applied)
};

// 0 or -errno.
int read_busy_poll(int fd, BusyPollSettings& out) noexcept;

// Sets usecs, then budget, then prefer, verifying each; on the first refusal
// or mismatch restores all three to their previous values.
BusyPollOutcome apply_busy_poll(int fd, const BusyPollConfig& config);

// SO_INCOMING_NAPI_ID. 0 or -errno; id 0 means the socket has no valid NAPI
// id (the kernel folds non-NAPI values to 0), e.g. a device without NAPI or
// no queue/frame has marked the socket yet.
int read_napi_id(int fd, std::uint32_t& id) noexcept;

// recvfrom(fd, NULL, 0, MSG_DONTWAIT): with SO_BUSY_POLL set, the kernel
// busy-polls the socket's NAPI for up to `usecs` (once, without sleeping).
// Returns 0 or -errno.
int drive_napi(int fd) noexcept;

}  // namespace xdpvhost::xsk

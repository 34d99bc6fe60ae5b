#pragma once
// How broadcast and multicast (ARP, IPv6 neighbour discovery, ...) reach the
// guests while the node keeps receiving them too: XDP cannot clone a frame,
// so the steering program passes them to the kernel, and this AF_PACKET
// socket on the uplink takes a copy of each. A classic BPF filter admits only
// frames whose destination has the group bit set and that the host did not
// send itself (pkttype != PACKET_OUTGOING); PACKET_IGNORE_OUTGOING is set as
// well where the kernel has it. Non-blocking; recv_batch() uses recvmmsg
// into the caller's buffers. The service thread floods the copies to the
// guests of the uplink.

#include <cstdint>
#include <memory>
#include <string>

#include <linux/filter.h>

#include "sys/unique_fd.hpp"

namespace xdpvhost::nic {

// One receive slot: the caller's buffer in, the frame length out.
struct FloodFrame {
  std::uint8_t* data = nullptr;
  std::uint32_t capacity = 0;
  std::uint32_t len = 0;   // bytes stored
  bool truncated = false;  // the frame was longer than capacity
};

class FloodSocket {
 public:
  static std::unique_ptr<FloodSocket> open(const std::string& ifname, std::string& error);

  int fd() const noexcept { return fd_.get(); }
  int ifindex() const noexcept { return ifindex_; }

  // Receives up to n frames; returns how many (0 if none pending) or -errno.
  int recv_batch(FloodFrame* frames, unsigned n) noexcept;

  // Kernel counters since the last call (PACKET_STATISTICS resets them):
  // frames that passed the filter and were queued, and frames that passed it
  // but were dropped because the socket's receive buffer was full.
  struct Stats {
    std::uint32_t queued = 0;
    std::uint32_t dropped = 0;
  };
  int read_and_reset_stats(Stats& out) noexcept;

  // The classic BPF program the socket uses (exposed for tests).
  static const sock_fprog& filter() noexcept;

 private:
  FloodSocket() = default;
  sys::UniqueFd fd_;
  int ifindex_ = 0;
};

}  // namespace xdpvhost::nic

#pragma once
// A port of the switch: a guest's virtio-net device or one queue of an
// uplink NIC. All datapath methods run on the port's owning service thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/counters.hpp"
#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

class Forwarder;

enum class PortKind : std::uint8_t { kGuest, kUplink };

// An fd the owning thread sleeps on while the port is idle.
struct WaitFd {
  int fd = -1;
  std::uint32_t events = 0;  // EPOLLIN / EPOLLOUT
  bool is_kick = false;      // a guest kick eventfd: read and counted on wakeup
  class Port* port = nullptr;
  // In the epoll set only around sleeps (ServiceThread::watch_sleep_only_fds
  // says when it is added and removed). An fd in an epoll set has
  // a wait-queue entry, and the kernel then takes the epoll locks at every
  // wakeup of that socket: for an AF_XDP socket that is every completed TX
  // frame (sock_wfree) and every received one, ~10% of the guest->outside
  // CPU in the profile. A busy thread polls the rings and needs none of it.
  bool only_while_sleeping = false;
};

class Port {
 public:
  // `uplink` is the uplink a guest sends unknown unicast and floods to, or
  // the uplink an uplink queue belongs to (kNoUplinkId if none).
  static constexpr std::uint32_t kNoUplinkId = 0xffffffff;

  Port(std::uint32_t id, std::string name, PortKind kind, std::uint32_t uplink = kNoUplinkId)
      : id_(id), name_(std::move(name)), kind_(kind), uplink_(uplink), group_(id) {}
  virtual ~Port() = default;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  std::uint32_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  PortKind kind() const noexcept { return kind_; }
  std::uint32_t uplink() const noexcept { return uplink_; }
  // The device the port serves a part of: a guest port whose queue pairs are
  // spread over several service threads is one Port per thread (a queue
  // group), all with the id of the first group here. Its own id otherwise.
  std::uint32_t group() const noexcept { return group_; }
  void set_group(std::uint32_t first_group_id) noexcept { group_ = first_group_id; }
  PortCounters& counters() noexcept { return counters_; }
  const PortCounters& counters() const noexcept { return counters_; }

  // Takes frames from the port (guest TX, NIC RX) and forwards them; returns
  // how many it took.
  virtual unsigned poll(Forwarder& forwarder) = 0;
  // Puts one frame into the port (guest RX, NIC TX), or counts why not.
  virtual void deliver(const Frame& frame) = 0;
  // Whether this unicast frame would be taken now; false asks the sender to
  // leave it where it is (back-pressure) rather than drop it.
  virtual bool can_accept(const Frame& /*frame*/) const noexcept { return true; }
  // Whether the port takes TCP GSO frames whole (a guest with GUEST_TSO4 or
  // GUEST_TSO6 for that IP version): what an uplink's GRO may make for it.
  // Any thread.
  virtual bool takes_tso(bool /*ipv6*/) const noexcept { return false; }
  // End of a poll round: publish used entries, signal, kick.
  virtual void end_burst() = 0;
  // Before the thread sleeps: re-enable notifications; true if work arrived
  // meanwhile (the thread must poll again).
  virtual bool prepare_sleep() = 0;
  // The thread is busy polling again: notifications may be suppressed.
  virtual void after_wake() = 0;
  // What to sleep on; `needs_timer` if some ring can only be polled.
  virtual void wait_fds(std::vector<WaitFd>& out, bool& needs_timer) = 0;
  // A read of `fd`, one of its wait fds that a peer holds too, slept until
  // it was interrupted (sys::PeerIoWatch): the peer cleared its O_NONBLOCK.
  // The port stops using it.
  virtual void peer_fd_blocked(int /*fd*/) {}
  // Whether the port can change threads now (Dataplane::move): nothing it
  // accepted is still on its way out, where a frame sent after the move
  // (through another queue) could overtake it. Owning thread.
  virtual bool settled() const noexcept { return true; }
  // Periodic housekeeping on the owning thread (about every 100 ms), for
  // ports that ask for it.
  virtual bool wants_housekeeping() const noexcept { return false; }
  virtual void housekeeping() {}

  // The port's wait fds changed (a ring started, stopped or broke): the
  // thread rebuilds its set. True once after that.
  void wait_fds_changed() noexcept { wait_fds_changed_ = true; }
  bool take_wait_fds_changed() noexcept {
    const bool changed = wait_fds_changed_;
    wait_fds_changed_ = false;
    return changed;
  }

 private:
  std::uint32_t id_;
  std::string name_;
  PortKind kind_;
  std::uint32_t uplink_;
  std::uint32_t group_;
  PortCounters counters_;
  bool wait_fds_changed_ = false;
};

}  // namespace xdpvhost::dataplane

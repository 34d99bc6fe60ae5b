#pragma once
// One queue of an uplink NIC as a switch port: an AF_XDP socket and its
// UMEM, plus (on the queue that carries it) the packet socket through which
// broadcast and multicast frames the kernel also keeps reach the guests.
// Owned by one service thread; the uplink controller (control thread) hands
// sockets in and takes them out with commands. Made of what both directions
// share (uplink_queue.hpp) and the two directions, each in its own type:
//
//   NIC -> guests   UplinkRx: RX ring (and flood socket) -> GRO or straight
//                   on -> forward -> UMEM frame back to the pool; the fill
//                   ring kept full every burst (here)
//   guests -> NIC   UplinkTx: frame copied or segmented into UMEM frames ->
//                   TX ring; submitted once per burst, sendto() only when
//                   the kernel needs it, completions drained every burst;
//                   at most tx_inflight_max frames in flight, beyond which
//                   senders wait (both from vhost_net: docs/techniques.md)
//
// NAPI busy polling, the starvation check and the socket statistics are
// the port's own.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/forwarder.hpp"
#include "dataplane/port.hpp"
#include "dataplane/tunables.hpp"
#include "dataplane/uplink_queue.hpp"
#include "dataplane/uplink_rx.hpp"
#include "dataplane/uplink_tx.hpp"
#include "nic/flood_socket.hpp"
#include "xsk/busy_poll.hpp"
#include "xsk/starvation_detector.hpp"
#include "xsk/umem.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::dataplane {

class UplinkQueuePort final : public Port {
 public:
  using Options = UplinkQueue::Options;

  UplinkQueuePort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options);
  ~UplinkQueuePort() override;

  // ---- commands (owning thread) ----
  // What the port let go of, for the caller to close on its own thread:
  // never on the service thread, where closing a kernel socket can wait for
  // an RCU grace period (AF_XDP and AF_PACKET release call synchronize_net)
  // and every port of the thread would wait with it. The socket goes first
  // (libxdp ties the rings to it), then its UMEM.
  struct Released {
    std::unique_ptr<xsk::XskSocket> socket;
    std::unique_ptr<xsk::Umem> umem;
    std::unique_ptr<nic::FloodSocket> flood;
    void close() noexcept {
      socket.reset();
      umem.reset();
      flood.reset();
    }
  };
  // Takes the socket and its UMEM; returns any it had.
  [[nodiscard]] Released bind(std::unique_ptr<xsk::Umem> umem,
                              std::unique_ptr<xsk::XskSocket> socket);
  // Lets go of the socket and UMEM; frames in flight are lost with them.
  [[nodiscard]] Released unbind();
  // Takes `flood` (may be null); the one it had is returned.
  [[nodiscard]] Released set_flood_socket(std::unique_ptr<nic::FloodSocket> flood);
  void set_link_up(bool up) noexcept { q_.set_link_up(up); }
  void set_max_frame(std::uint32_t bytes) noexcept { q_.options.max_frame = bytes; }
  void set_tunables(const Tunables& t);
  // Frames the XDP program steered to this queue so far (the controller
  // reads the program's counters); input of the starvation detector.
  void set_offered(std::uint64_t frames) noexcept {
    offered_.store(frames, std::memory_order_relaxed);
  }

  // ---- any thread ----
  std::uint32_t queue() const noexcept { return q_.options.queue; }
  const UplinkQueueStatus& status() const noexcept { return q_.status; }
  const UplinkQueueCounters& queue_counters() const noexcept { return q_.counters; }
  // Why NAPI busy polling is (in)active; written by commands, read by control.
  std::string napi_busy_poll_reason() const;

  // ---- Port ----
  unsigned poll(Forwarder& forwarder) override;
  void deliver(const Frame& frame) override { tx_.deliver(frame); }
  bool can_accept(const Frame& frame) const noexcept override { return tx_.can_accept(frame); }
  void end_burst() override { tx_.end_burst(); }
  bool settled() const noexcept override { return tx_.settled(); }
  bool prepare_sleep() override;
  void after_wake() override { rx_.woke(); }
  void wait_fds(std::vector<WaitFd>& out, bool& needs_timer) override;
  bool wants_housekeeping() const noexcept override { return q_.socket != nullptr; }
  void housekeeping() override;

 private:
  void apply_napi_busy_poll(bool prefer);
  void refresh_statistics() noexcept;
  void set_reason(std::string reason);

  UplinkQueue q_;
  UplinkRx rx_;
  UplinkTx tx_;

  // Busy polling the NIC's NAPI context (docs/techniques.md).
  bool napi_active_ = false;
  bool napi_prefer_ = false;
  xsk::StarvationDetector starvation_;
  std::atomic<std::uint64_t> offered_{0};
  // XDP_STATISTICS of sockets bound before the current one (kernel counters
  // are per socket), and the last read of the current one.
  xsk::XskStatistics stats_base_;
  xsk::XskStatistics stats_last_;

  mutable std::mutex reason_mutex_;  // control path only: set by commands, read by reports
  std::string reason_ = "not requested";
};

}  // namespace xdpvhost::dataplane

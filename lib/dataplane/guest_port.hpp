#pragma once
// One vhost-user virtio-net port on its service thread: the Port the
// switch polls and delivers to, made of the port's rings (guest_rings.hpp:
// its virtqueues, eventfds, signals and what the guest negotiated) and its
// two directions, each in its own type:
//
//   guest TX (odd vrings)   GuestTx: pop chain -> strip the virtio-net
//                           header, validate its offload -> port security
//                           -> forward -> used entry (len 0)
//   guest RX (even vrings)  GuestRx: frame -> pass its offload on or cut it
//                           into segments -> one chain, or several with
//                           MRG_RXBUF -> header + frame copied in -> used
//                           entries; held in order while the guest has no
//                           buffer
//
// Owned by one service thread; the control side reaches it only through
// commands (start_queue / stop_queue / set_*), run on that thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/guest_rings.hpp"
#include "dataplane/guest_rx.hpp"
#include "dataplane/guest_tx.hpp"
#include "dataplane/mac_policy.hpp"
#include "dataplane/mac_refusal.hpp"
#include "dataplane/port.hpp"
#include "dataplane/source_guard.hpp"
#include "dataplane/tunables.hpp"
#include "vhost/device.hpp"
#include "vhost/device_backend.hpp"

namespace xdpvhost::dataplane {

class GuestPort final : public Port {
 public:
  using QueueState = GuestRings::QueueState;
  static constexpr std::uint32_t kMaxVrings = GuestRings::kMaxVrings;
  static constexpr std::uint32_t kMaxQueuePairs = GuestRings::kMaxQueuePairs;
  static constexpr std::uint32_t kBacklogFrames = GuestRx::kBacklogFrames;

  struct Options {
    std::uint32_t mtu = 1500;
    PortTunables tunables;
    MacPolicy mac_policy = MacPolicy::kFixed;
    std::optional<net::MacAddress> mac;  // the configured MAC; none: learned
    bool holds_mac = true;  // false: another port of its VM holds `mac` for now (fixed)
  };

  // `learner` (may be null: nothing is learned) is asked when the guest sends
  // from a MAC the port may take; it must outlive the port.
  GuestPort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options,
            MacLearner* learner = nullptr);

  // ---- commands (owning thread) ----
  void start_queue(vhost::QueueStart&& start);
  std::uint16_t stop_queue(std::uint32_t vring, vhost::RingStop why = vhost::RingStop::kForGood);
  void set_mtu(std::uint32_t mtu) noexcept;
  void set_tunables(const PortTunables& t) noexcept {
    tunables_ = t;
    tx_.set_flood_rate(t.flood_rate);
  }
  void set_learn_request_rate(const LearnRequestRate& rate) noexcept {
    tx_.set_learn_request_rate(rate);
  }
  // The answers to a learning request (see SourceGuard).
  void mac_learned(const net::MacAddress& mac) noexcept { tx_.mac_learned(mac); }
  void mac_refused(const net::MacAddress& mac, MacRefusal why) noexcept {
    tx_.mac_refused(mac, why);
  }
  // The MAC moved to another port (the guest migrated there).
  void mac_released() noexcept { tx_.mac_released(); }
  // Announce `mac` (SEND_RARP after a migration): a RARP from it goes out
  // at the next poll, flooded like a broadcast the guest sent (to the
  // uplink and the local guests), and through port security like one.
  void announce(const net::MacAddress& mac) noexcept { tx_.announce(mac); }

  // ---- status (any thread) ----
  QueueState queue_state(std::uint32_t vring) const noexcept { return rings_.state(vring); }
  virtio::QueueError queue_error(std::uint32_t vring) const noexcept { return rings_.error(vring); }
  bool broken() const noexcept { return rings_.broken(); }
  // Frames of queue pair `pair` (< kMaxQueuePairs); zero for pairs another
  // queue group of the device polls.
  const QueuePairCounters& pair_counters(std::uint32_t pair) const noexcept {
    return rings_.pair_counters(pair);
  }
  std::uint64_t features() const noexcept { return rings_.features(); }
  // Frames waiting for the guest to post receive buffers.
  std::uint32_t held() const noexcept { return rx_.held(); }

  // ---- Port ----
  unsigned poll(Forwarder& forwarder) override;
  void deliver(const Frame& frame) override { rx_.deliver(frame); }
  bool takes_tso(bool ipv6) const noexcept override { return rings_.takes_tso(ipv6); }
  void end_burst() override;
  bool prepare_sleep() override;
  void after_wake() override;
  void wait_fds(std::vector<WaitFd>& out, bool& needs_timer) override;
  void peer_fd_blocked(int fd) override;

 private:
  Options options_;
  PortTunables tunables_;
  GuestRings rings_;
  GuestTx tx_;
  GuestRx rx_;
};

}  // namespace xdpvhost::dataplane

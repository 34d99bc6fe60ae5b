#pragma once
// A guest port's transmit direction: frames from the guest's transmit
// queues (odd vrings) to the switch. Per chain: pop it (walked no further
// than the longest frame the guest may send), strip the virtio-net header
// and validate the offload it asks for, then port security (SourceGuard:
// the frame's source must be the guest's), the flood limit, and the
// forwarder; the chain is returned used (len 0) once its frame was taken
// or dropped. A destination that is full leaves the chain on the ring
// (back-pressure to the guest). A pending announce (SEND_RARP) goes first.

#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/frame.hpp"
#include "dataplane/guest_rings.hpp"
#include "dataplane/mac_policy.hpp"
#include "dataplane/mac_refusal.hpp"
#include "dataplane/port.hpp"
#include "dataplane/source_guard.hpp"
#include "dataplane/token_bucket.hpp"
#include "dataplane/tunables.hpp"
#include "net/offload_validation.hpp"
#include "virtio/descriptor_chain.hpp"

namespace xdpvhost::dataplane {

class Forwarder;

class GuestTx {
 public:
  // Descriptors a port walks at most per round on one transmit queue: a
  // burst of 64-byte frames takes 32 to 64, of 64 KiB TSO frames about 20 per
  // frame (a Linux guest's chains hold at most MAX_SKB_FRAGS + 2 buffers).
  // Chains of many small buffers, just under the frame limit, cost their
  // guest its own rounds, not its neighbours'.
  static constexpr std::uint32_t kDescriptorsPerRound = 256;

  struct Security {
    MacPolicy mac_policy = MacPolicy::kFixed;
    std::optional<net::MacAddress> mac;  // the configured MAC; none: learned
    bool holds_mac = true;  // false: another port of its VM holds `mac` for now (fixed)
  };

  // `port` is the port the frames come from (the forwarder's and port
  // security's `from`); `learner` as for SourceGuard.
  GuestTx(GuestRings& rings, Port& port, const PortTunables& tunables, const Security& security,
          MacLearner* learner);

  // Takes frames from every running transmit queue; returns how many.
  unsigned poll(Forwarder& forwarder);

  // Frames wait on a transmit queue while their source is decided on: the
  // answer (a command) wakes the thread, not the ring.
  bool holding() const noexcept { return source_.pending(); }

  void set_flood_rate(std::uint32_t rate) noexcept { flood_.set_rate(rate, flood_bucket(rate)); }
  void set_learn_request_rate(const LearnRequestRate& rate) noexcept {
    source_.set_request_rate(rate);
  }
  // The answers to a learning request (see SourceGuard), counted once per
  // port (not per queue group).
  void mac_learned(const net::MacAddress& mac) noexcept;
  void mac_refused(const net::MacAddress& mac, MacRefusal why) noexcept;
  void mac_released() noexcept { source_.released(); }
  // A RARP from `mac` at the next poll (see GuestPort::announce).
  void announce(const net::MacAddress& mac) noexcept {
    announce_mac_ = mac;
    announce_pending_ = true;
  }

 private:
  unsigned poll_queue(GuestQueue& q, Forwarder& forwarder);
  void send_announce(Forwarder& forwarder);
  // False when the chain is no frame; with `refused` set when its offload
  // request failed validation.
  bool frame_from_chain(const virtio::DescriptorChain& chain, Frame& frame,
                        net::OffloadError& refused);
  // A frame its source may not send (SourceGuard): dropped, and why counted.
  void count_refused(Admission admission) noexcept;
  bool counts_for_device() const noexcept { return port_.group() == port_.id(); }

  GuestRings& rings_;
  Port& port_;
  const PortTunables& tunables_;
  SourceGuard source_;
  TokenBucket flood_;
  net::OffloadPolicy policy_;
  bool announce_pending_ = false;
  net::MacAddress announce_mac_;

  // Scratch reused for every frame (no allocation after warm-up).
  virtio::DescriptorChain chain_;
  std::vector<Span> spans_;
};

}  // namespace xdpvhost::dataplane

#pragma once
// An uplink queue's receive direction, NIC -> guests: frames the XDP program
// steered to the AF_XDP socket's RX ring (one UMEM frame each, or with
// multi-buffer a chain of them), and the broadcast and multicast frames of
// the flood socket. Each frame's destination is named once
// (Forwarder::route); TCP segments for a guest on this thread that takes
// TSO go through GRO, the rest straight to the forwarder. UMEM frames go
// back to the pool as soon as their frame was copied on; those GRO holds,
// after the flush at the end of the burst. A full destination leaves the
// rest of the burst on the RX ring.

#include <array>
#include <cstdint>
#include <vector>

#include "dataplane/forwarder.hpp"
#include "dataplane/uplink_queue.hpp"
#include "net/gro_table.hpp"
#include "nic/flood_socket.hpp"

namespace xdpvhost::dataplane {

class UplinkRx {
 public:
  explicit UplinkRx(UplinkQueue& queue);

  // The RX ring's burst, then the flood socket's (see poll_flood);
  // returns the frames taken.
  unsigned poll(Forwarder& forwarder);
  // After a wakeup the flood socket is read at once.
  void woke() noexcept { flood_countdown_ = 0; }
  // rx_burst changed: GRO's hold list keeps room for a whole burst.
  void reserve_burst(std::uint32_t rx_burst);

 private:
  unsigned poll_ring(Forwarder& forwarder);
  unsigned poll_flood(Forwarder& forwarder);
  // Frames for a guest that takes TSO go through GRO; the rest straight on.
  bool coalescable(const Frame& frame, const Forwarder::Route& route,
                   const Forwarder& forwarder) const noexcept;
  void forward_gro(Forwarder& forwarder, const net::GroFrame& f);
  // What GRO hands finished frames to during poll_ring.
  struct GroDeliver {
    UplinkRx& rx;
    Forwarder& forwarder;
    void operator()(const net::GroFrame& f) { rx.forward_gro(forwarder, f); }
  };
  // A frame of several RX descriptors (multi-buffer) forwarded, through GRO
  // when coalescable (then its UMEM frames wait in held_ for the flush);
  // false if its destination is full (the chain stays on the ring).
  bool forward_chain(Forwarder& forwarder, GroDeliver& deliver, std::uint32_t first,
                     const xsk::PacketExtent& packet);

  UplinkQueue& q_;
  std::array<Span, UplinkQueue::kMaxChain> chain_spans_{};
  net::GroTable gro_;
  // UMEM frames GRO holds in this burst, freed after the flush. Reserved for
  // every descriptor a burst can take: rx_burst, or one chain longer than
  // that (at most kMaxChain; a longer one is dropped, never held).
  std::vector<std::uint64_t> held_;
  // A GRO frame for the forwarder: its header, then its payload ranges.
  std::array<Span, net::kGroMaxPayloadSpans + 1> gro_spans_{};

  unsigned flood_countdown_ = 0;  // poll rounds until the flood socket is read again
  std::vector<std::uint8_t> flood_buffers_;
  std::vector<nic::FloodFrame> flood_frames_;
};

}  // namespace xdpvhost::dataplane

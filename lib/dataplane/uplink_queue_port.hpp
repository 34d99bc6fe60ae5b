#pragma once
// One queue of an uplink NIC as a switch port: an AF_XDP socket and its
// UMEM, plus (on the queue that carries it) the packet socket through which
// broadcast and multicast frames the kernel also keeps reach the guests.
// Owned by one service thread; the uplink controller (control thread) hands
// sockets in and takes them out with commands.
//
// NIC -> guests: RX ring -> forward (copy into the guest) -> frame back to
//   the pool -> fill ring kept full; every burst.
// guests -> NIC: frame copied into a UMEM frame (NEEDS_CSUM completed) ->
//   TX ring; submitted once per burst; sendto() only when the kernel needs it
//   (need_wakeup, or in copy mode while descriptors are pending);
//   completions drained every burst; at most tx_inflight_max frames between
//   TX and completion, beyond which senders are told to wait (both from
//   vhost_net: docs/techniques.md).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/forwarder.hpp"
#include "dataplane/port.hpp"
#include "net/gro_table.hpp"
#include "dataplane/tunables.hpp"
#include "xsk/busy_poll.hpp"
#include "nic/flood_socket.hpp"
#include "xsk/starvation_detector.hpp"
#include "xsk/umem.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::dataplane {

// What the control side and the metrics see of one uplink queue.
struct UplinkQueueStatus {
  std::atomic<bool> bound{false};
  std::atomic<bool> zero_copy{false};
  std::atomic<bool> multi_buffer{false};
  std::atomic<bool> tx_checksum_offload{false};  // see tx_checksum_offload_
  std::atomic<bool> link_up{false};
  std::atomic<std::uint32_t> napi_id{0};
  std::atomic<bool> napi_busy_poll_requested{false};
  std::atomic<bool> napi_busy_poll_active{false};
};

class UplinkQueuePort final : public Port {
 public:
  struct Options {
    std::uint32_t queue = 0;
    std::uint32_t max_frame = 1518;  // longest frame sent to the NIC
    Tunables tunables;
  };

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
  void set_link_up(bool up) noexcept;
  void set_max_frame(std::uint32_t bytes) noexcept { options_.max_frame = bytes; }
  void set_tunables(const Tunables& t);
  // Frames the XDP program steered to this queue so far (the controller
  // reads the program's counters); input of the starvation detector.
  void set_offered(std::uint64_t frames) noexcept {
    offered_.store(frames, std::memory_order_relaxed);
  }

  // ---- any thread ----
  std::uint32_t queue() const noexcept { return options_.queue; }
  const UplinkQueueStatus& status() const noexcept { return status_; }
  const UplinkQueueCounters& queue_counters() const noexcept { return queue_counters_; }
  // Why NAPI busy polling is (in)active; written by commands, read by control.
  std::string napi_busy_poll_reason() const;

  // ---- Port ----
  unsigned poll(Forwarder& forwarder) override;
  void deliver(const Frame& frame) override;
  bool can_accept(const Frame& frame) const noexcept override;
  void end_burst() override;
  bool prepare_sleep() override;
  void after_wake() override { flood_countdown_ = 0; }
  void wait_fds(std::vector<WaitFd>& out, bool& needs_timer) override;
  bool wants_housekeeping() const noexcept override { return socket_ != nullptr; }
  void housekeeping() override;

 private:
  unsigned poll_rx(Forwarder& forwarder);
  // Frames for a guest that takes TSO go through GRO; the rest straight on.
  bool coalescable(const Frame& frame, const Forwarder::Route& route,
                   const Forwarder& forwarder) const noexcept;
  void forward_gro(Forwarder& forwarder, const net::GroFrame& f);
  // What GRO hands finished frames to during poll_rx.
  struct GroDeliver {
    UplinkQueuePort& port;
    Forwarder& forwarder;
    void operator()(const net::GroFrame& f) { port.forward_gro(forwarder, f); }
  };
  // A frame of several RX descriptors (multi-buffer) forwarded, through GRO
  // when coalescable (then its UMEM frames wait in rx_addrs_ for the flush);
  // false if its destination is full (the chain stays on the ring).
  bool forward_chain(Forwarder& forwarder, GroDeliver& deliver, std::uint32_t first,
                     const xsk::PacketExtent& packet);
  // Room for `descriptors` more UMEM frames between TX and completion, and
  // on the ring.
  bool has_tx_room(std::uint32_t descriptors) const noexcept;
  // UMEM frames a frame of `len` bytes takes on TX.
  std::uint32_t tx_descriptors(std::uint32_t len) const noexcept;
  // TX descriptors a frame of the guests takes here: one chain per segment,
  // each as long as the headers and gso_size.
  std::uint32_t frame_descriptors(const Frame& frame) const noexcept;
  // Whether a segment (or frame) of `len` bytes can leave through this
  // queue: within max_frame, in one UMEM frame or a chain the socket takes.
  bool segment_fits(std::uint32_t len) const noexcept;
  // The most descriptors this queue ever has room for at once; a frame that
  // needs more never fits (dropped as oversize, not waited for).
  std::uint32_t tx_capacity() const noexcept;
  // Room for a frame of `descriptors` now; if not, the drop is counted
  // (oversize if it never fits, uplink_tx_full if only not now).
  bool admit_tx(std::uint32_t descriptors) noexcept;
  // One packet, already in UMEM frames addrs[0..descriptors), onto the TX
  // ring (a chain with XDP_PKT_CONTD when several).
  // `first_options`: xsk::kTxMetadataOption when the metadata before the
  // first frame's data asks for a checksum.
  void put_on_tx(const std::uint64_t* addrs, const std::uint32_t* lens, std::uint32_t descriptors,
                 std::uint32_t len, std::uint32_t first_options = 0);
  // `bytes` copied into as many UMEM frames as it needs and put on TX;
  // false if the socket cannot send a chain that long.
  bool put_copy_on_tx(const net::ByteSpans& bytes);
  void deliver_offloaded(const Frame& frame);
  unsigned poll_flood(Forwarder& forwarder);
  void kick_tx() noexcept;
  void apply_napi_busy_poll(bool prefer);
  void refresh_statistics() noexcept;
  void set_reason(std::string reason);

  Options options_;
  std::unique_ptr<xsk::Umem> umem_;
  std::unique_ptr<xsk::XskSocket> socket_;
  std::unique_ptr<nic::FloodSocket> flood_;
  bool link_up_ = false;
  // Checksums of frames that fit one UMEM frame go to the kernel through TX
  // metadata: the UMEM has the room, and the socket is in copy mode (the
  // kernel's skb takes CHECKSUM_PARTIAL on any device; a zero-copy driver
  // may not implement the request, and its capability is not read yet).
  bool tx_checksum_offload_ = false;
  std::uint32_t tx_reserved_ = 0;  // descriptors written but not submitted

  // Busy polling the NIC's NAPI context (docs/techniques.md).
  bool napi_active_ = false;
  bool napi_prefer_ = false;
  xsk::StarvationDetector starvation_;
  std::atomic<std::uint64_t> offered_{0};
  // XDP_STATISTICS of sockets bound before the current one (kernel counters
  // are per socket), and the last read of the current one.
  xsk::XskStatistics stats_base_;
  xsk::XskStatistics stats_last_;

  UplinkQueueStatus status_;
  UplinkQueueCounters queue_counters_;
  mutable std::mutex reason_mutex_;  // control path only: set by commands, read by reports
  std::string reason_ = "not requested";

  // Longest chain handled either way: a 9018-byte frame is 6 RX descriptors
  // of 2048-byte frames (1792 bytes of room), 65549 bytes 37; copy-mode TX
  // takes at most 18 (xsk::kCopyModeMaxTxDescriptors).
  static constexpr std::uint32_t kMaxChain = 64;
  // A jumbo GSO segment before it is cut into UMEM frames.
  static constexpr std::uint32_t kMaxJumboFrame = 65536;
  std::array<Span, kMaxChain> chain_spans_{};
  std::vector<std::uint8_t> tx_scratch_;

  net::GroTable gro_;
  // UMEM frames GRO holds in this burst, freed after the flush. Reserved for
  // every descriptor a burst can take: rx_burst, or one chain longer than
  // that (at most kMaxChain; a longer one is dropped, never held).
  std::vector<std::uint64_t> rx_addrs_;
  // A GRO frame for the forwarder: its header, then its payload ranges.
  std::array<Span, net::kGroMaxPayloadSpans + 1> gro_spans_{};

  unsigned flood_countdown_ = 0;  // poll rounds until the flood socket is read again
  std::vector<std::uint8_t> flood_buffers_;
  std::vector<nic::FloodFrame> flood_frames_;
};

}  // namespace xdpvhost::dataplane

#pragma once
// A vhost-user frontend for one virtio-net device that behaves like QEMU 7.2
// with a Linux guest: memfd guest RAM, split rings, kick/call eventfds, and
// QEMU's message sequence:
//
//   connection (per queue pair, as QEMU runs one vhost_dev per pair):
//     GET_FEATURES, [GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES,
//     GET_QUEUE_NUM (MQ), GET_MAX_MEM_SLOTS (CONFIGURE_MEM_SLOTS)],
//     SET_SLAVE_REQ_FD (pair 0, BACKEND_REQ), SET_OWNER, GET_FEATURES,
//     per ring SET_VRING_CALL (a placeholder "masked" eventfd), SET_VRING_ERR
//   guest driver writes features:
//     SET_VRING_ENABLE 1 for pair 0, 0 for the others, [NET_SET_MTU]
//   start (vhost_net_start, per pair):
//     [SET_VRING_ENABLE 1 for pair 0's rings], SET_FEATURES,
//     [GET_STATUS, SET_STATUS |FEATURES_OK], SET_MEM_TABLE (ack awaited with
//     REPLY_ACK; ADD_MEM_REG per region instead with CONFIGURE_MEM_SLOTS),
//     per ring SET_VRING_NUM, SET_VRING_BASE, SET_VRING_ADDR, SET_VRING_KICK,
//     SET_VRING_CALL; after the last pair [GET_STATUS, SET_STATUS
//     |ACKNOWLEDGE|DRIVER|DRIVER_OK]
//   guest enables the other pairs (MQ): SET_VRING_ENABLE 1 for pairs >= 1
//   stop: [SET_STATUS 0], GET_VRING_BASE per ring
//
// SET_VRING_ENABLE is sent only when PROTOCOL_FEATURES was negotiated, the
// status messages only with the STATUS protocol feature.
//
// Calls return false / nullopt on failure with the reason in last_error().

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontend/driver_queue.hpp"
#include "frontend/frontend_options.hpp"
#include "frontend/guest_memory_arena.hpp"
#include "frontend/net_driver.hpp"
#include "frontend/vhost_user_channel.hpp"
#include "sys/event_fd.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::testing {

class Frontend {
 public:
  // Creates the guest RAM; no I/O yet. Throws std::system_error if the
  // memfd cannot be created.
  explicit Frontend(FrontendOptions options);
  ~Frontend();
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  // ---- connection --------------------------------------------------------
  // Server role: creates the listening socket now (idempotent), so the
  // backend can be started afterwards. Throws std::system_error on failure.
  void listen();
  // Client role: connects, retrying until the timeout. Server role: listens
  // if needed and accepts one connection within the timeout.
  bool connect();
  bool connected() const noexcept { return channel_.connected(); }
  // Closes the connection (the server role keeps listening). Queue state is
  // kept, so connect() + negotiate(..., resume) can follow.
  void disconnect();

  // ---- lifecycle ---------------------------------------------------------
  // Connection setup + start (the whole sequence above). Builds the queues.
  // With `resume`, queues that already exist keep their ring contents and
  // are started from their device_base() (QEMU reconnecting to a backend
  // that restarted); otherwise they are fresh.
  bool negotiate(const NegotiateOptions& options = {}, bool resume = false);
  // The start part only (after stop()): same rings, bases from the stop.
  bool start();
  // [SET_STATUS 0] + GET_VRING_BASE per ring; returns the bases, indexed by
  // vring index, and stores each as the queue's device_base().
  std::optional<std::vector<std::uint16_t>> stop();
  // Guest reboot: stop, zero guest RAM and rings, then the driver-features
  // and start parts again with base 0. `options` may change features and
  // ring settings (not queue_pairs); a different queue_size rebuilds the
  // queues (references to the old ones become invalid).
  bool reset_and_renegotiate(std::optional<NegotiateOptions> options = std::nullopt);
  bool started() const noexcept { return started_; }

  // ---- what was negotiated -----------------------------------------------
  std::uint64_t offered_features() const noexcept { return offered_features_; }
  std::uint64_t acked_features() const noexcept { return acked_features_; }
  std::uint64_t offered_protocol_features() const noexcept { return offered_protocol_; }
  std::uint64_t acked_protocol_features() const noexcept { return acked_protocol_; }
  std::optional<std::uint64_t> queue_num() const noexcept { return queue_num_; }
  std::optional<std::uint8_t> last_status_set() const noexcept { return last_status_; }
  const NegotiateOptions& options() const noexcept { return options_; }
  std::uint16_t queue_pairs() const noexcept { return static_cast<std::uint16_t>(pairs_.size()); }
  const std::string& last_error() const noexcept { return last_error_; }

  // ---- parts -------------------------------------------------------------
  GuestMemoryArena& memory() noexcept { return memory_; }
  VhostUserChannel& channel() noexcept { return channel_; }
  DriverQueue& rx_queue(std::uint16_t pair = 0);  // vring 2*pair
  DriverQueue& tx_queue(std::uint16_t pair = 0);  // vring 2*pair+1
  DriverQueue& queue(std::uint16_t vring_index);
  NetDriver& net(std::uint16_t pair = 0);
  // Our end of the SET_SLAVE_REQ_FD socketpair (-1 if not negotiated).
  int backend_request_fd() const noexcept { return backend_req_.get(); }
  // Signals the backend sent on the placeholder call eventfds it was given
  // before the real ones (a backend still using a replaced call fd).
  std::uint64_t stale_call_signals();
  // Signals on the error eventfd of a ring (SET_VRING_ERR), drained.
  std::uint64_t error_signals(std::uint16_t vring_index);

  // ---- pair-0 conveniences -----------------------------------------------
  bool send_frame(std::span<const std::uint8_t> frame,
                  const std::optional<virtio::NetHeader>& header = std::nullopt,
                  const TxOptions& options = {}) {
    return net().send_frame(frame, header, options);
  }
  std::size_t post_rx_buffers(std::size_t count, std::uint32_t size,
                              const RxOptions& options = {}) {
    return net().post_rx_buffers(count, size, options);
  }
  std::vector<ReceivedFrame> receive_frames(std::chrono::milliseconds timeout,
                                            std::size_t min_frames = 1) {
    return net().receive_frames(timeout, min_frames);
  }
  std::size_t reclaim_tx() { return net().reclaim_tx(); }

 private:
  struct Pair {
    std::unique_ptr<DriverQueue> rx;
    std::unique_ptr<DriverQueue> tx;
    std::unique_ptr<NetDriver> net;
  };
  struct RingFds {
    sys::EventFd masked_call;  // given before the real call fd, as QEMU does
    sys::EventFd err;
  };

  bool fail(std::string message);
  bool fail_channel(const char* step);
  bool connection_setup();
  bool driver_features();
  bool start_pair(std::uint16_t pair);
  bool enable_pair(std::uint16_t pair, bool enable);
  bool add_status(std::uint8_t bits);
  bool send_memory_table();
  bool start_ring(DriverQueue& q);
  void build_queues();
  std::uint64_t features_to_ack() const;

  FrontendOptions fopts_;
  NegotiateOptions options_;
  GuestMemoryArena memory_;
  VhostUserChannel channel_;
  sys::UniqueFd listener_;
  sys::UniqueFd backend_req_;
  std::vector<Pair> pairs_;
  std::vector<RingFds> ring_fds_;
  std::vector<bool> pair_enabled_;  // SET_VRING_ENABLE 1 sent for the pair
  std::uint64_t stale_calls_ = 0;
  std::uint64_t offered_features_ = 0;
  std::uint64_t acked_features_ = 0;
  std::uint64_t offered_protocol_ = 0;
  std::uint64_t acked_protocol_ = 0;
  std::optional<std::uint64_t> queue_num_;
  std::optional<std::uint8_t> last_status_;
  bool mem_regions_added_ = false;  // CONFIGURE_MEM_SLOTS: regions already sent
  bool started_ = false;
  std::string last_error_;
};

}  // namespace xdpvhost::testing

#pragma once
// One vhost-user connection seen from the frontend: sends requests with their
// fds (SCM_RIGHTS), reads replies with a timeout, and handles REPLY_ACK
// (need_reply flag, u64 ack) the way QEMU does. Every request it sends is
// recorded, so tests can check the exact sequence.
//
// Typed helpers return false / nullopt on failure and leave the reason in
// last_error(); a negative acknowledgement (non-zero ack) is a failure too,
// with its value in last_ack(). send_raw()/send_bytes() write anything at all,
// for malformed-message tests.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontend/vhost_user_protocol.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::testing {

struct VhostUserMessage {
  std::uint32_t request = 0;
  std::uint32_t flags = 0;
  std::vector<std::uint8_t> payload;
  std::vector<sys::UniqueFd> fds;

  bool is_reply() const noexcept { return (flags & vhost_user::kFlagReply) != 0; }
  std::optional<std::uint64_t> u64() const noexcept;
  std::optional<vhost_user::VringState> vring_state() const noexcept;
};

// What the channel sent, in order (including send_raw, excluding send_bytes).
struct SentRequest {
  std::uint32_t request;
  std::uint32_t flags;
  std::vector<std::uint8_t> payload;
  std::size_t fd_count;

  std::optional<std::uint64_t> u64() const noexcept;
  std::optional<vhost_user::VringState> vring_state() const noexcept;
};

class VhostUserChannel {
 public:
  using Millis = std::chrono::milliseconds;

  VhostUserChannel() = default;
  explicit VhostUserChannel(sys::UniqueFd socket) : socket_(std::move(socket)) {}
  VhostUserChannel(VhostUserChannel&&) = default;
  VhostUserChannel& operator=(VhostUserChannel&&) = default;

  // Connects to a listening unix socket, retrying (the backend may not be up
  // yet) until `timeout`. Returns an unconnected channel on timeout.
  static VhostUserChannel connect_to(const std::string& path, Millis timeout,
                                     std::string* error = nullptr);

  bool connected() const noexcept { return socket_.valid(); }
  int fd() const noexcept { return socket_.get(); }
  void close() noexcept { socket_.reset(); }

  // How long to wait for each reply (default 10 s).
  void set_reply_timeout(Millis timeout) noexcept { reply_timeout_ = timeout; }
  // REPLY_ACK negotiated: set need_reply where QEMU does (SET_MEM_TABLE,
  // NET_SET_MTU, SET_SLAVE_REQ_FD, ADD/REM_MEM_REG) and wait for the ack.
  void set_reply_ack(bool negotiated) noexcept { reply_ack_ = negotiated; }
  bool reply_ack() const noexcept { return reply_ack_; }
  // With REPLY_ACK: ask for an ack on every request that has no reply of its
  // own, so each call returns only after the backend handled it.
  void set_ack_all(bool on) noexcept { ack_all_ = on; }

  // ---- raw access -------------------------------------------------------
  // Header {request, flags, payload.size()} + payload, with fds attached.
  bool send_raw(std::uint32_t request, std::uint32_t flags, std::span<const std::uint8_t> payload,
                std::span<const int> fds = {});
  // Arbitrary bytes (e.g. a header whose size field lies), fds on the first byte.
  bool send_bytes(std::span<const std::uint8_t> bytes, std::span<const int> fds = {});
  // Sends a request with need_reply set and returns the u64 ack (0 = success).
  std::optional<std::uint64_t> send_raw_await_ack(std::uint32_t request,
                                                  std::span<const std::uint8_t> payload,
                                                  std::span<const int> fds = {});
  // Next message from the backend, or nullopt on timeout / closed / garbage.
  std::optional<VhostUserMessage> receive(Millis timeout);
  // True if the backend closed the connection within `timeout` (any message
  // that arrives meanwhile is discarded).
  bool wait_peer_closed(Millis timeout);

  // ---- typed requests (front-end message types) -------------------------
  std::optional<std::uint64_t> get_features();
  bool set_features(std::uint64_t features);
  std::optional<std::uint64_t> get_protocol_features();
  bool set_protocol_features(std::uint64_t features);
  bool set_owner();
  bool reset_owner();
  bool set_mem_table(std::span<const vhost_user::MemoryRegion> regions, std::span<const int> fds);
  bool set_log_base(std::uint64_t size, std::uint64_t offset, int fd);
  bool set_log_fd(int fd);
  bool set_vring_num(std::uint32_t index, std::uint32_t num);
  bool set_vring_addr(const vhost_user::VringAddr& addr);
  bool set_vring_base(std::uint32_t index, std::uint32_t base);
  std::optional<std::uint32_t> get_vring_base(std::uint32_t index);
  // fd < 0 sends the "invalid fd" flag (polling mode) and no fd.
  bool set_vring_kick(std::uint32_t index, int fd);
  bool set_vring_call(std::uint32_t index, int fd);
  bool set_vring_err(std::uint32_t index, int fd);
  std::optional<std::uint64_t> get_queue_num();
  bool set_vring_enable(std::uint32_t index, bool enable);
  bool send_rarp(const std::uint8_t (&mac)[6]);
  bool net_set_mtu(std::uint16_t mtu);
  bool set_backend_req_fd(int fd);  // SET_SLAVE_REQ_FD
  std::optional<std::uint64_t> iotlb_msg(const vhost_user::IotlbMessage& msg);
  bool set_vring_endian(std::uint32_t index, bool big_endian);
  // Returns the config bytes of the reply (empty = backend reported an error).
  std::optional<std::vector<std::uint8_t>> get_config(std::uint32_t offset, std::uint32_t size,
                                                      std::uint32_t flags = 0);
  bool set_config(std::uint32_t offset, std::span<const std::uint8_t> data,
                  std::uint32_t flags = 0);
  // Reply payload and fd of GET_INFLIGHT_FD.
  std::optional<VhostUserMessage> get_inflight_fd(std::uint16_t num_queues,
                                                  std::uint16_t queue_size);
  bool set_inflight_fd(const vhost_user::InflightDescription& desc, int fd);
  bool reset_device();
  bool vring_kick(std::uint32_t index);  // in-band kick
  std::optional<std::uint64_t> get_max_mem_slots();
  bool add_mem_reg(const vhost_user::MemoryRegion& region, int fd);
  bool rem_mem_reg(const vhost_user::MemoryRegion& region);
  bool set_status(std::uint8_t status);
  std::optional<std::uint8_t> get_status();

  // ---- bookkeeping -------------------------------------------------------
  const std::string& last_error() const noexcept { return last_error_; }
  std::optional<std::uint64_t> last_ack() const noexcept { return last_ack_; }
  const std::vector<SentRequest>& sent() const noexcept { return sent_; }
  void clear_sent() noexcept { sent_.clear(); }

 private:
  bool wants_ack(vhost_user::Request request) const noexcept;
  // Sends a request without a reply of its own; waits for the ack if one was asked for.
  bool send_set(vhost_user::Request request, std::span<const std::uint8_t> payload,
                std::span<const int> fds = {});
  // Sends a request and waits for its reply message.
  std::optional<VhostUserMessage> send_get(vhost_user::Request request,
                                           std::span<const std::uint8_t> payload,
                                           std::span<const int> fds = {});
  std::optional<std::uint64_t> send_get_u64(vhost_user::Request request);
  std::optional<VhostUserMessage> await_reply(std::uint32_t request);
  bool send_u64(vhost_user::Request request, std::uint64_t value);
  bool send_vring_fd(vhost_user::Request request, std::uint32_t index, int fd);
  bool fail(std::string message);

  sys::UniqueFd socket_;
  Millis reply_timeout_{10000};
  bool reply_ack_ = false;
  bool ack_all_ = false;
  std::string last_error_;
  std::optional<std::uint64_t> last_ack_;
  std::vector<SentRequest> sent_;
};

}  // namespace xdpvhost::testing

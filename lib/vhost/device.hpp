#pragma once
// The state machine of one vhost-user virtio-net device (the backend side of
// one frontend connection). It lives on the control thread: it decodes what
// the frontend asks, keeps the authoritative ring configuration, and starts or
// stops rings on the datapath through DeviceBackend. It never touches a ring.

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "sys/unique_fd.hpp"
#include "vhost/device_backend.hpp"
#include "vhost/message.hpp"
#include "virtio/dirty_log.hpp"
#include "virtio/guest_memory.hpp"

namespace xdpvhost::vhost {

struct DeviceOptions {
  std::uint32_t queue_pairs = 1;  // 1..kMaxQueuePairs
  bool offer_csum = true;         // checksums are completed in software where needed
  bool offer_tso = true;          // segmentation offload, both ways (needs offer_csum)
};

struct MessageSpec;

class Device {
 public:
  // The most queue pairs a port offers (GET_QUEUE_NUM with the MQ protocol
  // feature). The one definition: the config rules, the control protocol's
  // schemas (held to it by a unit test) and the datapath's arrays use it.
  // 128 is what vhost-user can address: SET_VRING_KICK/CALL/ERR carry the
  // vring index in 8 bits (256 vrings); QEMU's control queue is its own.
  static constexpr std::uint32_t kMaxQueuePairs = 128;
  static constexpr std::uint32_t kMaxVrings = 2 * kMaxQueuePairs;

  struct Vring {
    std::uint32_t num = 0;
    std::uint16_t base = 0;
    bool addr_set = false;
    std::uint64_t desc = 0, avail = 0, used = 0;
    bool log_used = false;             // SET_VRING_ADDR with VHOST_VRING_F_LOG
    std::uint64_t log_guest_addr = 0;  // where writes to the used ring are logged
    sys::UniqueFd kick;
    sys::UniqueFd call;
    sys::UniqueFd err;
    bool kick_received = false;  // started by SET_VRING_KICK, stopped by GET_VRING_BASE
    bool enabled = false;        // SET_VRING_ENABLE
    bool running = false;        // handed to the datapath
    bool base_known = true;      // false: the datapath did not say where it stopped
  };

  Device(DeviceOptions options, DeviceBackend& backend);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Handles one message; the caller sends the reply the outcome asks for.
  Outcome handle(Message& message);

  // The frontend went away: stop every ring and forget the session.
  void disconnect();

  // What we offer.
  std::uint64_t offered_features() const noexcept;
  std::uint64_t offered_protocol_features() const noexcept;

  // State, for reports.
  std::uint64_t acked_features() const noexcept { return acked_features_; }
  std::uint64_t acked_protocol_features() const noexcept { return acked_protocol_features_; }
  std::uint8_t status() const noexcept { return status_; }
  std::uint32_t mtu() const noexcept { return mtu_; }
  bool has_memory() const noexcept { return memory_ != nullptr; }
  // Why the session's last memory table was refused ("" once one is taken,
  // and in a new session): the guest's rings cannot run on it, so the port
  // reports itself broken until the frontend sends memory the daemon maps.
  const std::string& memory_refusal() const noexcept { return memory_refusal_; }
  const std::array<Vring, kMaxVrings>& vrings() const noexcept { return vrings_; }
  std::uint32_t vring_count() const noexcept { return 2 * options_.queue_pairs; }
  bool reply_ack_negotiated() const noexcept;
  // Dirty logging is on: LOG_ALL acked and a log mapped (live migration).
  bool logging() const noexcept;
  const std::shared_ptr<const virtio::DirtyLog>& log() const noexcept { return log_; }
  // SEND_RARP requests handed to the backend, and refused or not sent.
  std::uint64_t rarps_sent() const noexcept { return rarps_sent_; }

  // Message handlers, named after the request; the message table maps
  // requests to them (message_table.cpp).
  Outcome on_get_features(Message&);
  Outcome on_set_features(Message&);
  Outcome on_set_owner(Message&);
  Outcome on_reset_owner(Message&);
  Outcome on_set_mem_table(Message&);
  Outcome on_set_log_base(Message&);
  Outcome on_set_log_fd(Message&);
  Outcome on_send_rarp(Message&);
  Outcome on_set_vring_num(Message&);
  Outcome on_set_vring_addr(Message&);
  Outcome on_set_vring_base(Message&);
  Outcome on_get_vring_base(Message&);
  Outcome on_set_vring_kick(Message&);
  Outcome on_set_vring_call(Message&);
  Outcome on_set_vring_err(Message&);
  Outcome on_get_protocol_features(Message&);
  Outcome on_set_protocol_features(Message&);
  Outcome on_get_queue_num(Message&);
  Outcome on_set_vring_enable(Message&);
  Outcome on_net_set_mtu(Message&);
  Outcome on_set_backend_req_fd(Message&);
  Outcome on_reset_device(Message&);
  Outcome on_set_status(Message&);
  Outcome on_get_status(Message&);
  Outcome on_unsupported(Message&);

 private:
  bool log_shmfd_negotiated() const noexcept;
  // The frontend waits for a reply of the request's own, even to a refusal.
  bool waits_for_reply(const MessageSpec& spec) const noexcept;
  Vring* vring_from_state(const Message& m, std::string& error);
  Vring* vring_from_fd_message(Message& m, sys::UniqueFd& fd, std::string& error);
  bool should_run(std::uint32_t index) const noexcept;
  // Brings ring `index` to the state it should be in; `restart` forces a
  // running ring to be handed over again (its configuration changed).
  void refresh(std::uint32_t index, bool restart = false);
  void refresh_all(bool restart);
  void stop(std::uint32_t index, RingStop why = RingStop::kForGood);
  void reset_session();

  DeviceOptions options_;
  DeviceBackend& backend_;
  bool owner_set_ = false;
  std::uint64_t acked_features_ = 0;
  std::uint64_t acked_protocol_features_ = 0;
  std::uint8_t status_ = 0;
  std::uint32_t mtu_ = 0;
  std::shared_ptr<const virtio::GuestMemory> memory_;
  std::string memory_refusal_;
  std::shared_ptr<const virtio::DirtyLog> log_;  // SET_LOG_BASE; dropped when LOG_ALL goes
  sys::UniqueFd log_notify_;                     // SET_LOG_FD (kept; QEMU does not read it)
  std::uint64_t rarps_sent_ = 0;
  std::array<Vring, kMaxVrings> vrings_{};
};

}  // namespace xdpvhost::vhost

#pragma once
// What a vhost-user device asks of the datapath that serves its rings. The
// dataplane implements it; the device (control thread) calls it.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "sys/unique_fd.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/split_queue.hpp"

namespace xdpvhost::vhost {

struct QueueStart {
  std::uint32_t vring = 0;  // vring index: even = guest RX, odd = guest TX
  virtio::SplitQueue::Config ring;
  std::shared_ptr<const virtio::GuestMemory> memory;
  sys::UniqueFd kick;          // invalid: the frontend does not kick, the ring is polled
  sys::UniqueFd call;          // invalid: the frontend wants no interrupts
  sys::UniqueFd err;           // invalid: the frontend wants no error notification
  std::uint64_t features = 0;  // negotiated virtio features
};

// Why a ring stops. For good: GET_VRING_BASE, a disabled ring, a reset or the
// end of the session. To restart: the frontend sent a new kick, call or err
// fd, new addresses or features for a running ring, which starts again at
// once where it stopped (the guest's ring goes on; frames held for it wait).
enum class RingStop : std::uint8_t { kForGood, kRestart };

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // The ring may be served from now on.
  virtual void start_queue(QueueStart start) = 0;
  // Stops serving the ring and returns the next avail index to process, once
  // the datapath no longer touches the ring or its memory. Nothing if the
  // datapath did not stop it in time (its thread is stalled): where the ring
  // stopped is then unknown.
  virtual std::optional<std::uint16_t> stop_queue(std::uint32_t vring, RingStop why) = 0;
  // The frontend told the MTU it gave the guest (NET_SET_MTU).
  virtual void set_mtu(std::uint32_t mtu) = 0;
  // The guest moved here (SEND_RARP after a migration, the guest has no
  // GUEST_ANNOUNCE): announce `mac` on the network. False if this backend
  // cannot (the device then says so in the log).
  virtual bool announce(const std::array<std::uint8_t, 6>& mac) {
    (void)mac;
    return false;
  }
};

}  // namespace xdpvhost::vhost

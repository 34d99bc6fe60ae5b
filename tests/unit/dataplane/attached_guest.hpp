#pragma once
// Test helpers for a running Dataplane: a guest port with both rings started
// on a service thread (its NetTestGuest the driver), and a bounded wait.

#include <chrono>
#include <cstdint>
#include <thread>

#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port.hpp"
#include "net_test_guest.hpp"

namespace xdpvhost::dataplane::test {

// Waits (up to a generous deadline, so a broken build fails instead of
// hanging) until `done` holds.
template <class Fn>
bool eventually(Fn done) {
  using namespace std::chrono_literals;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(100us);
  }
  return done();
}

inline Dataplane::Options options(std::uint16_t threads, std::uint32_t busy_poll_us) {
  Dataplane::Options o;
  o.threads = threads;
  o.tunables.busy_poll_us = busy_poll_us;
  return o;
}

// A guest port at `mac` attached to `thread`, its RX and TX rings started.
// Commands go to the thread that owns it now (it may have been moved).
struct Attached {
  Attached(Dataplane& dp, std::uint16_t thread, const std::uint8_t mac[6],
           std::uint64_t features = default_features(), std::uint32_t mtu = 1500,
           PortTunables tunables = {})
      : dp(dp),
        guest(features),
        port(dp.allocate_port_id(), "p", Port::kNoUplinkId,
             GuestPort::Options{mtu, tunables, MacPolicy::kFixed, net::MacAddress::from(mac)}) {
    dp.attach(port, thread, net::MacAddress::from(mac));
    for (std::uint32_t v : {0u, 1u}) {
      auto start = guest.start(v);
      ServiceThread& owner = dp.owner(port);
      owner.call([&] {
        port.start_queue(std::move(start));
        owner.wait_fds_changed();
      });
    }
  }
  ~Attached() {
    for (std::uint32_t v : {0u, 1u}) dp.owner(port).call([&] { port.stop_queue(v); });
    dp.detach(port);
  }
  Dataplane& dp;
  NetTestGuest guest;
  GuestPort port;
};

}  // namespace xdpvhost::dataplane::test

#pragma once
// When a MAC may move from the port that holds it to another port (both
// learn-move, or both fixed and configured with it: the source and target
// ports of a VM the orchestrator gave a fixed MAC): only with evidence of a
// live migration of one VM between them, so that a reboot, a driver reload
// or a QEMU restart of the holder never hands its MAC to another guest.
//   - the same VM: both ports' owners name one namespace and VM (the DRA
//     plugin passes them; a port without an owner never hands over);
//   - a migration arrived on the taker (MigrationEvidence::arrived);
//   - the holder's guest left: its frontend is gone, or every ring stopped
//     while dirty logging was on (MigrationEvidence::left_logging).
// A migration that fails after the hand-over resumes the source: the port
// that handed the MAC over gets it back within kMacGiveBackGrace, once the
// taker's guest is stopped or gone, without a migration signal.

#include <chrono>
#include <string>
#include <vector>

#include "controller/guest_port_controller.hpp"
#include "net/mac_address.hpp"

namespace xdpvhost::controller {

inline constexpr std::chrono::seconds kMacGiveBackGrace{60};

class MacHandovers {
 public:
  using Clock = std::chrono::steady_clock;

  // Why `taker` may not take `mac` from `holder`; empty when it may.
  std::string refusal(const GuestPortController& taker, const GuestPortController& holder,
                      const net::MacAddress& mac, Clock::time_point now) const;
  // `mac` moved from port `from` to port `to`.
  void record(const net::MacAddress& mac, const std::string& from, const std::string& to,
              Clock::time_point now);
  // Whether `mac` moved from port `taker` to port `holder` less than
  // kMacGiveBackGrace ago: `taker` may have it back without a migration.
  bool gives_back(const std::string& taker, const std::string& holder, const net::MacAddress& mac,
                  Clock::time_point now) const;

 private:
  struct Handover {
    net::MacAddress mac;
    std::string from, to;
    Clock::time_point at;
  };
  std::vector<Handover> handovers_;  // within the grace period: at most one per MAC
};

}  // namespace xdpvhost::controller

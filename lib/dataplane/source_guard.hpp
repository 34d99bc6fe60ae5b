#pragma once
// Port security for one guest port: which source MAC its guest may send
// from, and learning that MAC (MacPolicy). Owned by the port's service
// thread; the control side answers learning requests with the learned() and
// refused() commands, run on that thread.
//
//   source == the port's MAC            -> admitted (the one compare per frame)
//   group bit or all zero               -> refused
//   fixed, or learn with a MAC already  -> refused (spoofed_source)
//   another port owns it (switch table) -> refused (fixed, learn); learn-move
//                                          asks for a hand-over and refuses
//                                          the frames until it is granted
//                                          (the control side grants it only
//                                          when the owner's guest stopped:
//                                          the guest migrated here)
//   a request is pending                -> only the candidate is admitted
//                                          (not while a hand-over is asked)
//   else: the control side is asked (MacLearner), the frame admitted
//
// At most one request is outstanding, so a guest cycling through source MACs
// costs the control thread one decision at a time and the datapath nothing.

#include <optional>

#include "dataplane/mac_policy.hpp"
#include "net/mac_address.hpp"

namespace xdpvhost::dataplane {

class Port;
class SwitchTable;

// The control side of learning (GuestPortController implements it).
class MacLearner {
 public:
  virtual ~MacLearner() = default;
  // On the service thread: the guest sent from `mac`, which the port may
  // take. False if the request could not be made (asked again with a later
  // frame). Must not block.
  virtual bool request(const net::MacAddress& mac) noexcept = 0;
};

class SourceGuard {
 public:
  SourceGuard(MacPolicy policy, std::optional<net::MacAddress> mac, MacLearner* learner) noexcept
      : policy_(policy), mac_(mac), learner_(learner) {}

  // Whether a frame from `src` may enter the switch; `table` (may be null)
  // says which port owns which MAC, `self` is this guard's port.
  bool admit(const net::MacAddress& src, const SwitchTable* table, const Port* self) noexcept {
    if (mac_ && src == *mac_) [[likely]]
      return true;
    return admit_new(src, table, self);
  }

  // ---- commands from the control side ----
  // The port is reached at `mac` from now on.
  void learned(const net::MacAddress& mac) noexcept;
  // `mac` may not be taken (another port owns it); its frames are refused.
  void refused(const net::MacAddress& mac) noexcept;
  // The port's MAC moved to another port (its guest migrated there): the
  // port has none until it learns again.
  void released() noexcept;

  MacPolicy policy() const noexcept { return policy_; }
  const std::optional<net::MacAddress>& mac() const noexcept { return mac_; }
  bool pending() const noexcept { return pending_; }

 private:
  bool admit_new(const net::MacAddress& src, const SwitchTable* table, const Port* self) noexcept;

  MacPolicy policy_;
  std::optional<net::MacAddress> mac_;
  MacLearner* learner_;
  bool pending_ = false;
  bool handover_ = false;  // the pending request takes the MAC over from another port
  net::MacAddress candidate_;
  std::optional<net::MacAddress> refused_;
};

}  // namespace xdpvhost::dataplane

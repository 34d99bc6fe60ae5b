#pragma once
// Port security for one guest port: which source MAC its guest may send
// from, and learning that MAC (MacPolicy). Owned by the port's service
// thread; the control side answers learning requests with the learned() and
// refused() commands, run on that thread.
//
//   source == the port's MAC            -> admitted (the one compare per frame)
//   group bit or all zero               -> refused
//   fixed, or learn with a MAC already  -> refused (spoofed_source), except
//                                          a fixed port's own MAC while
//                                          another port of its VM holds it
//                                          (a same-node migration's target:
//                                          it asks for a hand-over, as
//                                          learn-move does, and may ask
//                                          again after a refusal)
//   the MAC refused last time           -> refused
//   another port owns it (switch table) -> refused (fixed, learn: the first
//                                          frame of such an attempt is
//                                          kRefuseOwned); learn-move asks
//                                          for a hand-over (the control side
//                                          grants it only when the owner's
//                                          guest stopped: it migrated here)
//   a request is pending                -> the candidate's frames are held
//                                          (they wait in the guest's ring),
//                                          any other source is refused
//   the port asked too often            -> refused, not asked (kRefuseRateLimited:
//                                          a token bucket, set_request_rate)
//   else: the control side is asked (MacLearner), the frame held
//
// Nothing from a candidate enters the switch before the control side has
// decided: a MAC it refuses (someone else's on the LAN) never reaches the
// wire or another guest. At most one request is outstanding, so a guest
// cycling through source MACs costs the control thread one decision at a
// time and the datapath nothing, and the bucket bounds how many decisions
// (each a new switch table, XDP map entry and NIC filter entry) it gets.

#include <cstdint>
#include <optional>

#include "dataplane/mac_policy.hpp"
#include "dataplane/token_bucket.hpp"
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

// What to do with a frame from a source (SourceGuard::admit).
enum class Admission : std::uint8_t {
  kAdmit,              // into the switch
  kHold,               // leave it where it is: the control side is deciding on its source
  kRefuse,             // drop it (spoofed_source)
  kRefuseOwned,        // drop it: the first frame from another port's MAC (counted once)
  kRefuseRateLimited,  // drop it: the port asked for decisions too often (counted per frame)
};

class SourceGuard {
 public:
  // `configured`: the port's configured MAC (fixed: the only one it may
  // have); `holds` is false when another port of its VM holds it for now.
  SourceGuard(MacPolicy policy, std::optional<net::MacAddress> configured, bool holds,
              MacLearner* learner) noexcept
      : policy_(policy),
        configured_(configured),
        mac_(holds ? configured : std::nullopt),
        learner_(learner) {
    set_request_rate(LearnRequestRate{});
  }

  // Whether a frame from `src` may enter the switch; `table` (may be null)
  // says which port owns which MAC, `self` is this guard's port.
  Admission admit(const net::MacAddress& src, const SwitchTable* table, const Port* self) noexcept {
    if (mac_ && src == *mac_) [[likely]]
      return Admission::kAdmit;
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

  // Requests to the control side at most at this rate; the bucket starts full.
  void set_request_rate(const LearnRequestRate& rate) noexcept {
    requests_.set_rate(rate.per_second, rate.burst);
  }

  MacPolicy policy() const noexcept { return policy_; }
  const std::optional<net::MacAddress>& mac() const noexcept { return mac_; }
  bool pending() const noexcept { return pending_; }

 private:
  Admission admit_new(const net::MacAddress& src, const SwitchTable* table,
                      const Port* self) noexcept;

  MacPolicy policy_;
  std::optional<net::MacAddress> configured_;
  std::optional<net::MacAddress> mac_;
  MacLearner* learner_;
  TokenBucket requests_;
  bool pending_ = false;
  net::MacAddress candidate_;
  std::optional<net::MacAddress> refused_;  // the last MAC the control side refused
  std::optional<net::MacAddress> owned_;    // the last other port's MAC a frame came from
};

}  // namespace xdpvhost::dataplane

#include "controller/mac_handover.hpp"

#include <algorithm>

namespace xdpvhost::controller {

namespace {

bool learn_move(const GuestPortController& p) {
  return p.config().mac_policy == dataplane::MacPolicy::kLearnMove;
}

// Ports whose policy lets `mac` move between them: learn-move ports (the
// holder learned it), or fixed ports both configured with it.
bool may_move(const GuestPortController& taker, const GuestPortController& holder,
              const net::MacAddress& mac) {
  if (learn_move(taker) && learn_move(holder)) return holder.mac_source() == MacSource::kLearned;
  return share_fixed_mac(taker.config(), holder.config()) && taker.config().mac == mac;
}

}  // namespace

std::string MacHandovers::refusal(const GuestPortController& taker,
                                  const GuestPortController& holder, const net::MacAddress& mac,
                                  Clock::time_point now) const {
  if (!same_vm(taker.config(), holder.config()))
    return "a MAC moves only between ports of one VM (owner namespace and vm)";
  if (!may_move(taker, holder, mac))
    return "a MAC moves only between learn-move ports, or fixed ports configured with it";
  const bool holder_stopped = !holder.frontend_connected() || holder.guest_stopped();
  if (holder_stopped && gives_back(taker.config().name, holder.config().name, mac, now)) return {};
  if (!taker.migration().arrived())
    return "no migration arrived here (rings not resumed, no SEND_RARP)";
  if (holder.frontend_connected() && !holder.migration().left_logging())
    return "its guest did not leave by migration (connected, not stopped under dirty logging)";
  return {};
}

bool MacHandovers::gives_back(const std::string& taker, const std::string& holder,
                              const net::MacAddress& mac, Clock::time_point now) const {
  return std::any_of(handovers_.begin(), handovers_.end(), [&](const Handover& h) {
    return h.mac == mac && h.from == taker && h.to == holder && now - h.at < kMacGiveBackGrace;
  });
}

void MacHandovers::record(const net::MacAddress& mac, const std::string& from,
                          const std::string& to, Clock::time_point now) {
  std::erase_if(handovers_,
                [&](const Handover& h) { return h.mac == mac || now - h.at >= kMacGiveBackGrace; });
  handovers_.push_back(Handover{mac, from, to, now});
}

}  // namespace xdpvhost::controller

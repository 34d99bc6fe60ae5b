#pragma once
// Why a guest port may not take a source MAC its guest sent from (MAC
// learning, mac_policy learn and learn-move). Each refusal increments one
// counter named here, on the port that asked; its frames are dropped as
// spoofed_source. rate_limited is decided on the service thread (the
// control side is not asked) and counted per frame.

#include <array>
#include <cstddef>
#include <cstdint>

#include "sys/enum_names.hpp"

namespace xdpvhost::dataplane {

enum class MacRefusal : std::uint8_t {
  kAnotherPort,      // another port has it, or is configured with it
  kNodeAddress,      // an interface of the node has it (the uplink's own, say)
  kSeenOnWire,       // a frame from it arrived on an uplink recently: someone on the LAN uses it
  kOutsidePrefixes,  // not in mac_learning.prefixes
  kRateLimited,      // the port asked too often (mac_learning.relearn_per_s): not even asked
  kCount
};

inline constexpr std::size_t kMacRefusals = static_cast<std::size_t>(MacRefusal::kCount);

inline constexpr sys::EnumNames<MacRefusal, kMacRefusals> kMacRefusalNames{{
    {MacRefusal::kAnotherPort, "another_port"},
    {MacRefusal::kNodeAddress, "node_address"},
    {MacRefusal::kSeenOnWire, "seen_on_wire"},
    {MacRefusal::kOutsidePrefixes, "outside_prefixes"},
    {MacRefusal::kRateLimited, "rate_limited"},
}};
static_assert(sys::in_enum_order(kMacRefusalNames, kMacRefusals));

constexpr const char* to_string(MacRefusal r) {
  return sys::name_of(kMacRefusalNames, r);
}

}  // namespace xdpvhost::dataplane

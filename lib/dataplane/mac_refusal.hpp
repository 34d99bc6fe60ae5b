#pragma once
// Why a guest port may not take a source MAC its guest sent from (MAC
// learning, mac_policy learn and learn-move). Each refusal increments one
// counter named here, on the port that asked; its frames are dropped as
// spoofed_source. rate_limited is decided on the service thread (the
// control side is not asked) and counted per frame.

#include <array>
#include <cstddef>
#include <cstdint>

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

// The counter names, in the enum's order.
inline constexpr std::array<const char*, kMacRefusals> kMacRefusalNames{
    "another_port", "node_address", "seen_on_wire", "outside_prefixes", "rate_limited"};

constexpr const char* to_string(MacRefusal r) {
  const auto i = static_cast<std::size_t>(r);
  return i < kMacRefusals ? kMacRefusalNames[i] : "unknown";
}

}  // namespace xdpvhost::dataplane

#pragma once
// Why a guest port may not take a source MAC its guest sent from (MAC
// learning, mac_policy learn and learn-move). Each refusal increments one
// counter named here, on the port that asked; its frames are dropped as
// spoofed_source.

#include <cstddef>
#include <cstdint>

namespace xdpvhost::dataplane {

enum class MacRefusal : std::uint8_t {
  kAnotherPort,      // another port has it, or is configured with it
  kNodeAddress,      // an interface of the node has it (the uplink's own, say)
  kSeenOnWire,       // a frame from it arrived on an uplink recently: someone on the LAN uses it
  kOutsidePrefixes,  // not in mac_learning.prefixes
  kCount
};

inline constexpr std::size_t kMacRefusals = static_cast<std::size_t>(MacRefusal::kCount);

constexpr const char* to_string(MacRefusal r) {
  switch (r) {
    case MacRefusal::kAnotherPort:
      return "another_port";
    case MacRefusal::kNodeAddress:
      return "node_address";
    case MacRefusal::kSeenOnWire:
      return "seen_on_wire";
    case MacRefusal::kOutsidePrefixes:
      return "outside_prefixes";
    case MacRefusal::kCount:
      break;
  }
  return "unknown";
}

}  // namespace xdpvhost::dataplane

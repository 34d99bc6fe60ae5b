#pragma once
// How a guest port gets its MAC address, and which source addresses its
// guest may send from (port security):
//   fixed      the configured MAC; frames from any other source are dropped
//   learn      the first unicast source the guest sends becomes the port's
//              MAC and is locked; any other source is dropped
//   learn-move the MAC follows the guest when it sends from a new unicast
//              source (the old one is given up)
// A MAC another port owns is never taken over by learning, except by a
// learn-move port from another learn-move port of the same VM on evidence
// of a migration (the control side decides: controller/mac_handover.hpp).

#include <cstdint>
#include <optional>
#include <string_view>

#include "sys/enum_names.hpp"

namespace xdpvhost::dataplane {

enum class MacPolicy : std::uint8_t { kFixed, kLearn, kLearnMove };

// How often a port may ask the control side for a learning decision: the
// one place of mac_learning.relearn_per_s and relearn_burst's defaults.
struct LearnRequestRate {
  std::uint32_t per_second = 1;  // 0: no limit
  std::uint32_t burst = 4;
  bool operator==(const LearnRequestRate&) const = default;
};

// "fixed" / "learn" / "learn-move": the config file's spelling.
inline constexpr sys::EnumNames<MacPolicy, 3> kMacPolicyNames{{
    {MacPolicy::kFixed, "fixed"},
    {MacPolicy::kLearn, "learn"},
    {MacPolicy::kLearnMove, "learn-move"},
}};
static_assert(sys::in_enum_order(kMacPolicyNames, 3));

constexpr const char* to_string(MacPolicy policy) noexcept {
  return sys::name_of(kMacPolicyNames, policy, "fixed");
}
constexpr std::optional<MacPolicy> parse_mac_policy(std::string_view text) noexcept {
  return sys::value_named(kMacPolicyNames, text);
}

}  // namespace xdpvhost::dataplane

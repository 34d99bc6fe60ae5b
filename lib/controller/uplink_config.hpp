#pragma once
// An uplink as the config file and uplink.add describe it: the one type the
// daemon's config holds and the uplink's controller is built from. Defaults
// are written here only (proto/config.schema.json repeats them for readers).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/tunables.hpp"
#include "xsk/bind_mode.hpp"

namespace xdpvhost::controller {

struct UplinkConfig {
  std::string name;
  std::string interface;
  // NIC queue ids, one AF_XDP socket each; nullopt ("all"): every RX queue
  // the NIC has, following its channel changes (ethtool -L), up to kMaxQueues.
  std::optional<std::vector<std::uint32_t>> queues;
  static constexpr std::uint32_t kMaxQueues = 64;
  xsk::BindMode bind = xsk::BindMode::kAuto;
  std::uint32_t frame_size = 2048;
  std::uint32_t ring_size = 2048;  // RX/TX/completion; the fill ring is twice this
  std::optional<std::uint16_t> thread;
  // The L2 domain its guests belong to: the uplink's own name unless set.
  // Uplinks with the same domain let their guests reach each other; others
  // are separate networks (dataplane/switch_table.hpp).
  std::optional<std::string> l2_domain;
  const std::string& domain() const noexcept { return l2_domain ? *l2_domain : name; }
  dataplane::UplinkTunableOverrides tunables;
  bool operator==(const UplinkConfig&) const = default;
};

}  // namespace xdpvhost::controller

#pragma once
// A guest port as the config file and port.add describe it: the one type the
// daemon's config holds and the port's controller is built from. Defaults
// are written here only (proto/config.schema.json repeats them for readers).

#include <cstdint>
#include <optional>
#include <string>

#include "dataplane/mac_policy.hpp"
#include "dataplane/tunables.hpp"
#include "net/mac_address.hpp"
#include "vhost/socket_mode.hpp"

namespace xdpvhost::controller {

// Who the port serves, as the orchestrator names it (KubeVirt: the VM's
// namespace and name, the DRA claim); shown as labels of its metrics.
struct PortOwner {
  std::string ns;  // "namespace"
  std::string vm;
  std::string claim;
  bool operator==(const PortOwner&) const = default;
};

struct PortConfig {
  std::string name;
  std::string socket;  // the vhost-user socket's path
  vhost::SocketMode mode = vhost::SocketMode::kServer;
  std::optional<net::MacAddress> mac;  // none: learned (mac_policy learn, learn-move)
  dataplane::MacPolicy mac_policy = dataplane::MacPolicy::kFixed;
  std::optional<std::string> uplink;  // the uplink's name; none: local switching only
  std::uint32_t queue_pairs = 1;
  std::uint32_t mtu = 1500;
  std::optional<std::uint16_t> thread;  // none: the least loaded service thread
  dataplane::PortTunableOverrides tunables;
  std::optional<PortOwner> owner;
  bool operator==(const PortConfig&) const = default;
};

}  // namespace xdpvhost::controller

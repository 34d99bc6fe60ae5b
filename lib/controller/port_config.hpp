#pragma once
// A guest port as the config file and port.add describe it: the one type the
// daemon's config holds and the port's controller is built from. Defaults
// are written here only (proto/config.schema.json repeats them for readers).

#include <cstdint>
#include <optional>
#include <string>

#include "dataplane/tunables.hpp"
#include "net/mac_address.hpp"
#include "vhost/socket_mode.hpp"

namespace xdpvhost::controller {

struct PortConfig {
  std::string name;
  std::string socket;  // the vhost-user socket's path
  vhost::SocketMode mode = vhost::SocketMode::kServer;
  net::MacAddress mac;
  std::optional<std::string> uplink;  // the uplink's name; none: local switching only
  std::uint32_t queue_pairs = 1;
  std::uint32_t mtu = 1500;
  std::optional<std::uint16_t> thread;  // none: the least loaded service thread
  dataplane::PortTunableOverrides tunables;
  bool operator==(const PortConfig&) const = default;
};

}  // namespace xdpvhost::controller

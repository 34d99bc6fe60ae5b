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

// Both ports serve one VM: their owners name the same namespace and VM.
// A port without an owner is nobody's VM.
inline bool same_vm(const PortConfig& a, const PortConfig& b) noexcept {
  return a.owner && b.owner && !a.owner->ns.empty() && !a.owner->vm.empty() &&
         a.owner->ns == b.owner->ns && a.owner->vm == b.owner->vm;
}

// Two ports may be configured with one MAC only as the source and target of
// a same-node migration: both fixed, of one VM. One of them holds it at a
// time; it moves on evidence of the migration (controller/mac_handover).
inline bool share_fixed_mac(const PortConfig& a, const PortConfig& b) noexcept {
  return a.mac_policy == dataplane::MacPolicy::kFixed &&
         b.mac_policy == dataplane::MacPolicy::kFixed && a.mac && a.mac == b.mac && same_vm(a, b);
}

}  // namespace xdpvhost::controller

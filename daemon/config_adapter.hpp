#pragma once
// Maps the daemon's config types onto the library's own (lib/ knows nothing
// of the config file).

#include "config.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port_controller.hpp"
#include "dataplane/tunables.hpp"
#include "dataplane/uplink_controller.hpp"

namespace xdpvhost::daemon {

dataplane::Tunables to_dataplane(const Tunables& t);
dataplane::PortTunables to_dataplane_port(const Tunables& resolved);
dataplane::Dataplane::Options dataplane_options(const Config& config);
dataplane::GuestPortConfig guest_port_config(const Config& config, const PortConfig& port,
                                             std::uint32_t uplink_id);
dataplane::UplinkConfig uplink_config(const Config& config, const UplinkConfig& uplink,
                                      std::uint32_t id);

}  // namespace xdpvhost::daemon

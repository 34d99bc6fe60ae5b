#pragma once
// The rules a schema cannot express, shared by the loader (config.cpp) and
// the run-time changes (config_change.cpp). Internal to the config library.

#include <optional>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/config_result.hpp"
#include "json_schema/json_schema.hpp"
#include "nic/uplink_frame_limit.hpp"

namespace xdpvhost::daemon::config_rules {

// The longest frame an uplink of this config can carry on the running
// kernel, before its interface is looked at (nic::uplink_frame_limit with
// the kernel and frame size only).
nic::UplinkFrameLimit static_frame_limit(const UplinkConfig& uplink);

// `s` as a JSON string, for messages.
std::string json_quoted(std::string_view s);

// A kSchema error from validator output.
ConfigError schema_error(const std::vector<SchemaError>& errors);

// A ConfigError of `kind` for field `field` of the object at `where`
// ("ports[1]" + "mac" -> "ports[1].mac: ...").
ConfigError field_error(ConfigErrorKind kind, std::string_view where, std::string_view field,
                        std::string_view problem);

// What a port needs on its own: a unicast, non-zero MAC, a socket path
// that fits sun_path and 1 to vhost::Device::kMaxQueuePairs queue pairs.
std::optional<ConfigError> check_port_fields(const PortConfig& port, std::string_view where);

// Whether `port` may join `config` as it is (config.ports and
// config.uplinks are what exists so far): check_port_fields, then name /
// MAC / socket unused, its uplink exists, its thread exists.
std::optional<ConfigError> check_new_port(const Config& config, const PortConfig& port,
                                          std::string_view where);

// Whether `uplink` may join `config`: name unused by ports and uplinks, no
// queue of its interface bound by another uplink, its thread exists.
std::optional<ConfigError> check_new_uplink(const Config& config, const UplinkConfig& uplink,
                                            std::string_view where);

}  // namespace xdpvhost::daemon::config_rules

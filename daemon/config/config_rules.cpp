#include "config/config_rules.hpp"

#include <string>

#include "net/ethernet.hpp"
#include "sys/socket_directory.hpp"
#include "nic/uplink_frame_limit.hpp"
#include "vhost/device.hpp"

namespace xdpvhost::daemon::config_rules {

namespace {

constexpr std::size_t kShownErrors = 3;

std::optional<ConfigError> check_thread(const Config& config,
                                        const std::optional<std::uint32_t>& thread,
                                        std::string_view where) {
  if (thread && *thread >= config.threads.count) {
    return field_error(ConfigErrorKind::kInvalid, where, "thread",
                       std::to_string(*thread) + " is not below threads.count " +
                           std::to_string(config.threads.count));
  }
  return std::nullopt;
}

// Ports and uplinks share one name space.
std::optional<ConfigError> check_name_unused(const Config& config, const std::string& name,
                                             std::string_view where) {
  if (config.find_port(name)) {
    return field_error(ConfigErrorKind::kNameInUse, where, "name",
                       json_quoted(name) + " is already the name of a port");
  }
  if (config.find_uplink(name)) {
    return field_error(ConfigErrorKind::kNameInUse, where, "name",
                       json_quoted(name) + " is already the name of an uplink");
  }
  return std::nullopt;
}

}  // namespace

nic::UplinkFrameLimit static_frame_limit(const UplinkConfig& uplink) {
  nic::UplinkFrameFacts facts;
  facts.frame_size = uplink.frame_size;
  facts.ifname = uplink.interface;
  facts.kernel = nic::KernelVersion::running();
  return nic::uplink_frame_limit(facts);
}

std::string json_quoted(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ConfigError schema_error(const std::vector<SchemaError>& errors) {
  ConfigError e;
  e.kind = ConfigErrorKind::kSchema;
  for (const auto& err : errors) e.details.push_back(err.to_string());
  for (std::size_t i = 0; i < e.details.size() && i < kShownErrors; ++i) {
    if (i > 0) e.message += "; ";
    e.message += e.details[i];
  }
  if (e.details.size() > kShownErrors) {
    e.message += " (and " + std::to_string(e.details.size() - kShownErrors) + " more)";
  }
  if (e.message.empty()) e.message = "does not match the schema";
  return e;
}

ConfigError field_error(ConfigErrorKind kind, std::string_view where, std::string_view field,
                        std::string_view problem) {
  std::string path(where);
  if (!field.empty()) {
    if (!path.empty()) path += '.';
    path += field;
  }
  ConfigError e;
  e.kind = kind;
  e.message = path.empty() ? std::string(problem) : path + ": " + std::string(problem);
  return e;
}

std::optional<ConfigError> check_port_fields(const PortConfig& port, std::string_view where) {
  if (!port.mac) {
    if (port.mac_policy == dataplane::MacPolicy::kFixed)
      return field_error(ConfigErrorKind::kInvalid, where, "mac",
                         "needed with mac_policy fixed (or let the port learn it: mac_policy "
                         "learn or learn-move)");
  } else if (port.mac->is_multicast()) {
    return field_error(
        ConfigErrorKind::kInvalid, where, "mac",
        port.mac->to_string() + (port.mac->key() == 0xffffffffffff
                                     ? " is the broadcast address, a port needs a unicast MAC"
                                     : " is a multicast address, a port needs a unicast MAC"));
  }
  if (port.mac && port.mac->is_zero()) {
    return field_error(ConfigErrorKind::kInvalid, where, "mac",
                       "00:00:00:00:00:00 is not a valid port MAC");
  }
  if (std::string problem = check_socket_path(port.socket); !problem.empty()) {
    return field_error(ConfigErrorKind::kSocketPath, where, "socket", problem);
  }
  if (port.queue_pairs == 0 || port.queue_pairs > vhost::Device::kMaxQueuePairs) {
    return field_error(ConfigErrorKind::kInvalid, where, "queues",
                       std::to_string(port.queue_pairs) + " queue pairs; a port takes 1 to " +
                           std::to_string(vhost::Device::kMaxQueuePairs));
  }
  return std::nullopt;
}

std::optional<ConfigError> check_new_port(const Config& config, const PortConfig& port,
                                          std::string_view where) {
  if (auto e = check_port_fields(port, where)) return e;
  if (auto e = check_name_unused(config, port.name, where)) return e;
  for (const auto& other : config.ports) {
    if (port.mac && other.mac == port.mac && !controller::share_fixed_mac(port, other)) {
      return field_error(
          ConfigErrorKind::kMacInUse, where, "mac",
          port.mac->to_string() + " is already the MAC of port " + json_quoted(other.name));
    }
    if (other.socket == port.socket) {
      return field_error(
          ConfigErrorKind::kSocketInUse, where, "socket",
          json_quoted(port.socket) + " is already the socket of port " + json_quoted(other.name));
    }
  }
  if (!sys::socket_root_of(port.socket, config.socket_dirs)) {
    std::string dirs;
    for (const auto& d : config.socket_dirs) dirs += (dirs.empty() ? "" : ", ") + d;
    return field_error(
        ConfigErrorKind::kSocketPath, where, "socket",
        json_quoted(port.socket) + " is not below any of socket_dirs (" + dirs + ")");
  }
  if (port.socket == config.control.socket) {
    return field_error(ConfigErrorKind::kSocketInUse, where, "socket",
                       json_quoted(port.socket) + " is the control socket");
  }
  if (port.uplink) {
    const UplinkConfig* uplink = config.find_uplink(*port.uplink);
    if (uplink == nullptr) {
      return field_error(ConfigErrorKind::kNotFound, where, "uplink",
                         "there is no uplink " + json_quoted(*port.uplink));
    }
    // A frame must fit what an uplink of this frame size can carry on the
    // running kernel (one UMEM frame, or a descriptor chain with
    // multi-buffer); the interface itself may allow less, which the uplink
    // reports once it is set up (UplinkController::admits_mtu).
    const nic::UplinkFrameLimit limit = static_frame_limit(*uplink);
    const std::uint32_t frame = net::max_frame_for_mtu(port.mtu);
    if (!limit.fits(frame)) {
      return field_error(ConfigErrorKind::kInvalid, where, "mtu",
                         std::to_string(port.mtu) + " needs frames of " + std::to_string(frame) +
                             " bytes; uplink " + json_quoted(uplink->name) + " (frame_size " +
                             std::to_string(uplink->frame_size) + ") carries at most " +
                             std::to_string(limit.max_frame) + ": " + limit.reason);
    }
  }
  return check_thread(config, port.thread, where);
}

std::optional<ConfigError> check_new_uplink(const Config& config, const UplinkConfig& uplink,
                                            std::string_view where) {
  if (auto e = check_name_unused(config, uplink.name, where)) return e;
  // One uplink per interface: each attaches the XDP program, whose sockets
  // and guest MACs are its own; a second one would replace the first's.
  for (const auto& other : config.uplinks) {
    if (other.interface == uplink.interface) {
      return field_error(ConfigErrorKind::kInUse, where, "interface",
                         json_quoted(uplink.interface) + " is already uplink " +
                             json_quoted(other.name) +
                             "'s (one uplink per interface; list more queues in it)");
    }
  }
  return check_thread(config, uplink.thread, where);
}

}  // namespace xdpvhost::daemon::config_rules

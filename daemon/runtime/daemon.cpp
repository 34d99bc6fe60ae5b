#include "runtime/daemon.hpp"

#include <spdlog/spdlog.h>

#include "runtime/log_level.hpp"

namespace xdpvhost::daemon {

namespace {

dataplane::Dataplane::Options dataplane_options(const Config& config) {
  dataplane::Dataplane::Options o;
  o.threads = static_cast<std::uint16_t>(config.threads.count);
  for (auto cpu : config.threads.cpus) o.cpus.push_back(static_cast<int>(cpu));
  o.tunables = config.tunables;
  return o;
}

}  // namespace

Daemon::Daemon(boost::asio::io_context& io, Config config) : io_(io), config_(std::move(config)) {}

Daemon::~Daemon() {
  shutdown();
}

std::string Daemon::start() {
  dataplane_ = std::make_unique<dataplane::Dataplane>(dataplane_options(config_));
  for (const auto& uplink : config_.uplinks) {
    if (std::string error = open_uplink(uplink); !error.empty()) {
      shutdown();
      return "uplink " + uplink.name + ": " + error;
    }
  }
  for (const auto& port : config_.ports) {
    if (std::string error = open_port(port); !error.empty()) {
      shutdown();
      return "port " + port.name + ": " + error;
    }
  }
  spdlog::info("xdpvhostd running: {} service thread(s), {} uplink(s), {} port(s)",
               dataplane_->thread_count(), uplinks_.size(), ports_.size());
  return {};
}

void Daemon::shutdown() {
  // Closing a port stops its rings; stopping a ring publishes and signals
  // what is pending first.
  ports_.clear();
  uplinks_.clear();  // detaches the XDP programs, removes filter entries
  dataplane_.reset();
}

std::uint32_t Daemon::uplink_id(const std::optional<std::string>& name) const {
  if (!name) return dataplane::Port::kNoUplinkId;
  auto it = uplinks_.find(*name);
  return it == uplinks_.end() ? dataplane::Port::kNoUplinkId : it->second->id();
}

controller::UplinkController* Daemon::uplink_of(const PortConfig& port) {
  if (!port.uplink) return nullptr;
  auto it = uplinks_.find(*port.uplink);
  return it == uplinks_.end() ? nullptr : it->second.get();
}

const controller::UplinkController* Daemon::find_uplink(const std::string& name) const {
  auto it = uplinks_.find(name);
  return it == uplinks_.end() ? nullptr : it->second.get();
}

std::string Daemon::open_uplink(const UplinkConfig& uplink) {
  auto controller = std::make_unique<controller::UplinkController>(
      *dataplane_, io_, uplink, next_uplink_id_++, resolve(config_.tunables, uplink.tunables),
      config_.bpf_object.value_or(""));
  std::string error;
  if (!controller->start(error)) return error;
  uplinks_.emplace(uplink.name, std::move(controller));
  return {};
}

std::optional<ConfigError> Daemon::add_uplink(const UplinkConfig& uplink) {
  auto next = with_uplink_added(config_, uplink);
  if (!next) return next.error();
  const Config previous = config_;
  config_ = std::move(next.value());
  if (std::string error = open_uplink(uplink); !error.empty()) {
    config_ = previous;
    return ConfigError{
        ConfigErrorKind::kOperationFailed, "uplink " + uplink.name + ": " + error, {}};
  }
  persist();
  return std::nullopt;
}

std::optional<ConfigError> Daemon::remove_uplink(const std::string& name) {
  auto next = with_uplink_removed(config_, name);
  if (!next) return next.error();
  config_ = std::move(next.value());
  uplinks_.erase(name);
  spdlog::info("uplink {}: removed", name);
  persist();
  return std::nullopt;
}

std::string Daemon::open_port(const PortConfig& port) {
  auto controller = std::make_unique<controller::GuestPortController>(
      *dataplane_, io_, port, uplink_id(port.uplink),
      dataplane::PortTunables::of(resolve(config_.tunables, port.tunables)),
      [this](const controller::GuestPortController& p, const net::MacAddress& mac,
             std::string& why) { return allow_learned_mac(p, mac, why); });
  std::string error;
  if (!controller->start(error)) return error;
  spdlog::info("port {}: {} socket {} mac {} ({})", port.name, vhost::to_string(port.mode),
               port.socket, port.mac ? port.mac->to_string() : "none yet",
               dataplane::to_string(port.mac_policy));
  if (auto* uplink = uplink_of(port)) uplink->add_guest(port.name, port.mac, port.mtu);
  ports_.emplace(port.name, std::move(controller));
  return {};
}

const controller::GuestPortController* Daemon::port_with_mac(const net::MacAddress& mac) const {
  for (const auto& [name, port] : ports_)
    if (port->mac() == mac) return port.get();
  return nullptr;
}

bool Daemon::allow_learned_mac(const controller::GuestPortController& port,
                               const net::MacAddress& mac, std::string& why) {
  if (const auto* owner = port_with_mac(mac); owner != nullptr && owner != &port) {
    why = mac.to_string() + " is port " + owner->config().name + "'s";
    return false;
  }
  for (const auto& p : config_.ports)
    if (p.name != port.config().name && p.mac == mac) {
      why = mac.to_string() + " is configured for port " + p.name;
      return false;
    }
  if (auto* uplink = uplink_of(port.config())) uplink->set_guest_mac(port.config().name, mac);
  return true;
}

const controller::GuestPortController* Daemon::find_port(const std::string& name) const {
  auto it = ports_.find(name);
  return it == ports_.end() ? nullptr : it->second.get();
}

std::optional<ConfigError> Daemon::add_port(const PortConfig& port) {
  auto next = with_port_added(config_, port);
  if (!next) return next.error();
  if (port.mac)
    if (const auto* owner = port_with_mac(*port.mac))
      return ConfigError{ConfigErrorKind::kMacInUse,
                         "params.mac: " + port.mac->to_string() + " is the learned MAC of port \"" +
                             owner->config().name + "\"",
                         {}};
  const Config previous = config_;
  config_ = std::move(next.value());
  if (std::string error = open_port(port); !error.empty()) {
    config_ = previous;
    return ConfigError{ConfigErrorKind::kOperationFailed, "port " + port.name + ": " + error, {}};
  }
  persist();
  return std::nullopt;
}

std::optional<ConfigError> Daemon::remove_port(const std::string& name) {
  auto next = with_port_removed(config_, name);
  if (!next) return next.error();
  if (const PortConfig* port = config_.find_port(name)) {
    if (auto* uplink = uplink_of(*port)) uplink->remove_guest(port->name);
  }
  config_ = std::move(next.value());
  ports_.erase(name);
  spdlog::info("port {}: removed", name);
  persist();
  return std::nullopt;
}

std::optional<ConfigError> Daemon::set_tunables(const TunablesChange& change) {
  auto next = with_tunables_set(config_, change);
  if (!next) return next.error();
  config_ = std::move(next.value());
  apply_tunables();
  persist();
  return std::nullopt;
}

void Daemon::apply_tunables() {
  dataplane_->set_tunables(config_.tunables);
  for (const auto& port : config_.ports) {
    auto it = ports_.find(port.name);
    if (it != ports_.end())
      it->second->set_tunables(
          dataplane::PortTunables::of(resolve(config_.tunables, port.tunables)));
  }
  for (const auto& uplink : config_.uplinks) {
    auto it = uplinks_.find(uplink.name);
    if (it != uplinks_.end()) it->second->set_tunables(resolve(config_.tunables, uplink.tunables));
  }
}

std::string Daemon::version() {
#ifdef XDPVHOST_VERSION
  return XDPVHOST_VERSION;
#else
  return "0.0.0";
#endif
}

void Daemon::set_log_level(LogLevel level) {
  config_.log.level = level;
  spdlog::set_level(to_spdlog(level));
  persist();
}

void Daemon::persist() {
  if (!config_.state_file) return;
  if (std::string error = save_config_file(config_, *config_.state_file); !error.empty())
    spdlog::error("cannot save state to {}: {}", *config_.state_file, error);
}

}  // namespace xdpvhost::daemon

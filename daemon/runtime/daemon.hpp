#pragma once
// The running daemon: the datapath, every port and uplink, and the config
// they were made from. Lives on the control thread (its io_context); the
// control server and the config file both go through it, and a change that
// fails leaves everything exactly as it was.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "config/config_change.hpp"
#include "config/config_result.hpp"
#include "dataplane/dataplane.hpp"
#include "controller/guest_port_controller.hpp"
#include "controller/uplink_controller.hpp"

namespace xdpvhost::daemon {

class Daemon {
 public:
  Daemon(boost::asio::io_context& io, Config config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Creates what the config names. Returns "" or the first problem.
  std::string start();
  // Stops taking work: closes every port (flushing what is pending).
  void shutdown();

  const Config& config() const noexcept { return config_; }
  static std::string version();
  LogLevel log_level() const noexcept { return config_.log.level; }
  // Applies at once and is kept in the persisted state.
  void set_log_level(LogLevel level);
  boost::asio::io_context& io() noexcept { return io_; }
  dataplane::Dataplane& dataplane() noexcept { return *dataplane_; }
  std::chrono::steady_clock::time_point started_at() const noexcept { return started_at_; }

  // Run-time changes; on failure nothing changed.
  std::optional<ConfigError> add_port(const PortConfig& port);
  std::optional<ConfigError> remove_port(const std::string& name);
  std::optional<ConfigError> set_tunables(const TunablesChange& change);
  std::optional<ConfigError> add_uplink(const UplinkConfig& uplink);
  std::optional<ConfigError> remove_uplink(const std::string& name);

  const controller::GuestPortController* find_port(const std::string& name) const;
  const std::map<std::string, std::unique_ptr<controller::GuestPortController>>& ports() const {
    return ports_;
  }
  const controller::UplinkController* find_uplink(const std::string& name) const;
  const std::map<std::string, std::unique_ptr<controller::UplinkController>>& uplinks() const {
    return uplinks_;
  }

 private:
  std::string open_port(const PortConfig& port);
  std::string open_uplink(const UplinkConfig& uplink);
  std::uint32_t uplink_id(const std::optional<std::string>& name) const;
  // The port the switch reaches at `mac` (configured or learned), or nullptr.
  const controller::GuestPortController* port_with_mac(const net::MacAddress& mac) const;
  // The MacArbiter of every port: a MAC no other port has or is configured
  // with may be learned; the port's uplink then steers it.
  bool allow_learned_mac(const controller::GuestPortController& port, const net::MacAddress& mac,
                         std::string& why);
  controller::UplinkController* uplink_of(const PortConfig& port);
  void apply_tunables();
  void persist();

  boost::asio::io_context& io_;
  Config config_;
  std::unique_ptr<dataplane::Dataplane> dataplane_;
  std::map<std::string, std::unique_ptr<controller::UplinkController>> uplinks_;
  std::map<std::string, std::unique_ptr<controller::GuestPortController>> ports_;
  std::uint32_t next_uplink_id_ = 0;
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
};

}  // namespace xdpvhost::daemon

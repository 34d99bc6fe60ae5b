#pragma once
// The running daemon: the datapath, every port and uplink, and the config
// they were made from. Lives on the control thread (its io_context); the
// control server and the config file both go through it, and a change that
// fails leaves everything exactly as it was.
//
// Where the configuration comes from: --config (the file) declares
// everything; the state file adds the ports and uplinks added over the
// control socket (port.add, uplink.add) and not removed since -- and only
// those, so control, metrics, log and tunables always come from the file.
// An entry of the state file whose name the file also uses is dropped (the
// file wins). reload() brings the running daemon to a new version of the
// file through the same run-time changes the control methods make.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/config_change.hpp"
#include "controller/mac_handover.hpp"
#include "config/config_result.hpp"
#include "dataplane/dataplane.hpp"
#include "controller/guest_port_controller.hpp"
#include "controller/rebalancer.hpp"
#include "controller/uplink_controller.hpp"
#include "runtime/config_source.hpp"

namespace xdpvhost::daemon {

class Daemon {
 public:
  // `config` is the file's; `state` the state file's entries (added on top:
  // an entry that clashes with the file or breaks a rule is left out and
  // logged).
  Daemon(boost::asio::io_context& io, Config config, const RunTimeState& state = {});
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
  // The control socket and metrics listener in force (a reload may have
  // kept the old ones): what config.get shows.
  void set_listeners(const ControlConfig& control, const MetricsConfig& metrics);
  boost::asio::io_context& io() noexcept { return io_; }
  dataplane::Dataplane& dataplane() noexcept { return *dataplane_; }
  // Started: what moved queues between threads by measured load.
  const controller::Rebalancer& rebalancer() const noexcept { return *rebalancer_; }
  std::chrono::steady_clock::time_point started_at() const noexcept { return started_at_; }

  // Run-time changes (the control methods); on failure nothing changed.
  // Ports and uplinks added here are kept in the state file.
  std::optional<ConfigError> add_port(const PortConfig& port);
  std::optional<ConfigError> remove_port(const std::string& name);
  std::optional<ConfigError> set_tunables(const TunablesChange& change);
  std::optional<ConfigError> add_uplink(const UplinkConfig& uplink);
  std::optional<ConfigError> remove_uplink(const std::string& name);

  // Applies a new version of the file (SIGHUP): ports and uplinks it no
  // longer lists are removed, new ones added, changed ones re-created (a
  // change of tunables overrides or l2_domain is applied in place; ports on a
  // re-created uplink are re-created with it), global tunables and
  // socket_dirs set when they differ. Run-time ports and uplinks stay, but
  // for those whose name the file now uses. threads and bpf_object need a
  // restart: a change is logged and left. Control, metrics and log level are
  // the caller's (it owns those listeners). Returns every problem met; what
  // could be applied is. Sets config_source().problems and restart_needed.
  std::vector<std::string> reload(const Config& next);
  ConfigSource& config_source() noexcept { return config_source_; }
  const ConfigSource& config_source() const noexcept { return config_source_; }

  // The ports and uplinks added at run time (what the state file holds).
  RunTimeState run_time_state() const;
  bool is_run_time_port(const std::string& name) const { return run_time_ports_.count(name) != 0; }

  const controller::GuestPortController* find_port(const std::string& name) const;
  controller::GuestPortController* find_port(const std::string& name);
  const std::map<std::string, std::unique_ptr<controller::GuestPortController>>& ports() const {
    return ports_;
  }
  const controller::UplinkController* find_uplink(const std::string& name) const;
  controller::UplinkController* find_uplink(const std::string& name);
  const std::map<std::string, std::unique_ptr<controller::UplinkController>>& uplinks() const {
    return uplinks_;
  }

 private:
  // What an MTU above what the port's uplink carries does: refuses the port
  // (one added now: nothing is lost) or is reported and its longer frames
  // dropped as oversize (one the daemon starts with: the interface's MTU may
  // have been lowered since it was added, as it may while the daemon runs).
  enum class MtuAbove { kRefuse, kReport };
  std::string open_port(const PortConfig& port, MtuAbove mtu_above);
  std::string open_uplink(const UplinkConfig& uplink);
  std::uint32_t uplink_id(const std::optional<std::string>& name) const;
  // The port the switch reaches at `mac` (configured or learned), or nullptr.
  const controller::GuestPortController* port_with_mac(const net::MacAddress& mac) const;
  // Why `mac` may not be learned: outside mac_learning.prefixes, the address
  // of an interface of the node, or seen as a source on an uplink within
  // mac_learning.wire_source_age_s.
  std::optional<dataplane::MacRefusal> refusal_to_learn(const net::MacAddress& mac,
                                                        std::string& why) const;
  // The MacArbiter of every port. A learning port may take a MAC that
  // refusal_to_learn allows and that is not another port's (configured, or
  // learned and not handed over); a fixed port only its configured MAC, from
  // a port of its VM on evidence of a migration. The port's uplink then
  // steers it.
  std::optional<dataplane::MacRefusal> allow_learned_mac(
      const controller::GuestPortController& port, const net::MacAddress& mac, std::string& why);
  controller::UplinkController* uplink_of(const PortConfig& port);
  // Tells the switch which uplinks' guests share an L2 domain (each
  // uplink's l2_domain, by default its own name).
  void publish_l2_domains();
  void apply_tunables();
  void persist();
  std::optional<ConfigError> add_port_from(const PortConfig& port, bool run_time);
  std::optional<ConfigError> add_uplink_from(const UplinkConfig& uplink, bool run_time);
  void merge_state(const RunTimeState& state);

  boost::asio::io_context& io_;
  Config config_;
  std::unique_ptr<dataplane::Dataplane> dataplane_;
  std::unique_ptr<controller::Rebalancer> rebalancer_;  // after the ports: it looks at them
  std::map<std::string, std::unique_ptr<controller::UplinkController>> uplinks_;
  std::map<std::string, std::unique_ptr<controller::GuestPortController>> ports_;
  controller::MacHandovers handovers_;
  std::uint32_t next_uplink_id_ = 0;
  std::set<std::string> run_time_ports_;
  std::set<std::string> run_time_uplinks_;
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
  SecurityConfig started_security_;  // the one in force: a reload's waits for the next start
  ConfigSource config_source_;
};

}  // namespace xdpvhost::daemon

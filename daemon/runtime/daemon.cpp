#include "runtime/daemon.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "runtime/log_format.hpp"
#include "runtime/log_level.hpp"
#include "sys/socket_directory.hpp"

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

Daemon::Daemon(boost::asio::io_context& io, Config config, const RunTimeState& state)
    : io_(io), config_(std::move(config)), started_security_(config_.security) {
  merge_state(state);
}

void Daemon::merge_state(const RunTimeState& state) {
  for (const auto& u : state.uplinks) {
    if (const UplinkConfig* in_file = config_.find_uplink(u.name)) {
      if (!(*in_file == u))
        spdlog::warn("state file: uplink {} left out: the config file has an uplink of that name",
                     u.name);
      continue;
    }
    auto next = with_uplink_added(config_, u);
    if (!next) {
      spdlog::warn("state file: uplink {} left out: {}", u.name, next.error().message);
      continue;
    }
    config_ = std::move(next.value());
    run_time_uplinks_.insert(u.name);
  }
  for (const auto& p : state.ports) {
    if (const PortConfig* in_file = config_.find_port(p.name)) {
      if (!(*in_file == p))
        spdlog::warn("state file: port {} left out: the config file has a port of that name",
                     p.name);
      continue;
    }
    auto next = with_port_added(config_, p);
    if (!next) {
      spdlog::warn("state file: port {} left out: {}", p.name, next.error().message);
      continue;
    }
    config_ = std::move(next.value());
    run_time_ports_.insert(p.name);
  }
  if (!run_time_ports_.empty() || !run_time_uplinks_.empty())
    spdlog::info("restored state: {} port(s), {} uplink(s) added at run time",
                 run_time_ports_.size(), run_time_uplinks_.size());
}

Daemon::~Daemon() {
  shutdown();
}

std::string Daemon::start() {
  sys::set_port_socket_dirs(config_.socket_dirs);
  dataplane_ = std::make_unique<dataplane::Dataplane>(dataplane_options(config_));
  bool dropped = false;
  for (const auto& uplink : std::vector<UplinkConfig>(config_.uplinks)) {
    if (std::string error = open_uplink(uplink); !error.empty()) {
      if (!run_time_uplinks_.count(uplink.name)) {
        shutdown();
        return "uplink " + uplink.name + ": " + error;
      }
      // Added at run time by an earlier run: not worth failing the start.
      spdlog::error("uplink {} (from the state file): {}; left out", uplink.name, error);
      std::erase_if(config_.uplinks, [&](const UplinkConfig& u) { return u.name == uplink.name; });
      run_time_uplinks_.erase(uplink.name);
      dropped = true;
    }
  }
  for (const auto& port : std::vector<PortConfig>(config_.ports)) {
    const bool uplink_gone = port.uplink && config_.find_uplink(*port.uplink) == nullptr;
    std::string error = uplink_gone ? "its uplink " + *port.uplink + " was left out"
                                    : open_port(port, MtuAbove::kReport);
    if (!error.empty()) {
      if (!run_time_ports_.count(port.name)) {
        shutdown();
        return "port " + port.name + ": " + error;
      }
      spdlog::error("port {} (from the state file): {}; left out", port.name, error);
      std::erase_if(config_.ports, [&](const PortConfig& p) { return p.name == port.name; });
      run_time_ports_.erase(port.name);
      dropped = true;
    }
  }
  if (dropped) persist();
  rebalancer_ = std::make_unique<controller::Rebalancer>(io_, *dataplane_);
  rebalancer_->follow_tunables();
  spdlog::info("xdpvhostd running: {} service thread(s), {} uplink(s), {} port(s)",
               dataplane_->thread_count(), uplinks_.size(), ports_.size());
  return {};
}

void Daemon::shutdown() {
  rebalancer_.reset();  // moves nothing from here on
  // Closing a port stops its rings; stopping a ring publishes and signals
  // what is pending first.
  std::vector<std::string> names;
  for (const auto& [name, port] : ports_) names.push_back(name);
  ports_.clear();
  for (const auto& name : names) port_log_context().forget(name);
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

controller::UplinkController* Daemon::find_uplink(const std::string& name) {
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
  publish_l2_domains();
  return {};
}

void Daemon::publish_l2_domains() {
  // A domain is named by its first uplink's id; the uplinks that join it
  // are listed.
  std::vector<std::pair<std::uint32_t, const std::string*>> by_id;
  for (const auto& [name, uplink] : uplinks_)
    if (const UplinkConfig* c = config_.find_uplink(name))
      by_id.emplace_back(uplink->id(), &c->domain());
  std::sort(by_id.begin(), by_id.end());
  std::map<std::string, std::uint32_t> first;
  dataplane::L2Domains joined;
  for (const auto& [id, domain] : by_id)
    if (const auto [it, added] = first.try_emplace(*domain, id); !added)
      joined.emplace_back(id, it->second);
  dataplane_->set_l2_domains(std::move(joined));
}

std::optional<ConfigError> Daemon::add_uplink(const UplinkConfig& uplink) {
  return add_uplink_from(uplink, true);
}

std::optional<ConfigError> Daemon::add_uplink_from(const UplinkConfig& uplink, bool run_time) {
  auto next = with_uplink_added(config_, uplink);
  if (!next) return next.error();
  const Config previous = config_;
  config_ = std::move(next.value());
  if (std::string error = open_uplink(uplink); !error.empty()) {
    config_ = previous;
    return ConfigError{
        ConfigErrorKind::kOperationFailed, "uplink " + uplink.name + ": " + error, {}};
  }
  if (run_time) run_time_uplinks_.insert(uplink.name);
  persist();
  return std::nullopt;
}

std::optional<ConfigError> Daemon::remove_uplink(const std::string& name) {
  auto next = with_uplink_removed(config_, name);
  if (!next) return next.error();
  config_ = std::move(next.value());
  uplinks_.erase(name);
  run_time_uplinks_.erase(name);
  publish_l2_domains();
  spdlog::info("uplink {}: removed", name);
  persist();
  return std::nullopt;
}

std::string Daemon::open_port(const PortConfig& port, MtuAbove mtu_above) {
  // What the uplink's interface, program and sockets carry, once set up.
  if (const auto* uplink = uplink_of(port)) {
    std::string why;
    // kReport: the uplink says so once the port is its guest (add_guest).
    if (!uplink->admits_mtu(port.mtu, why) && mtu_above == MtuAbove::kRefuse) return why;
  }
  // A fixed MAC another port of the VM holds (a same-node migration's
  // source) is this port's once the migration shows (mac_handover.hpp).
  const auto at_start = port.mac && port_with_mac(*port.mac) != nullptr
                            ? controller::MacAtStart::kWaits
                            : controller::MacAtStart::kHolds;
  auto controller = std::make_unique<controller::GuestPortController>(
      *dataplane_, io_, port, uplink_id(port.uplink),
      dataplane::PortTunables::of(resolve(config_.tunables, port.tunables)),
      [this](const controller::GuestPortController& p, const net::MacAddress& mac,
             std::string& why) { return allow_learned_mac(p, mac, why); },
      at_start);
  controller->set_learn_request_rate(config_.mac_learning.requests);
  // Its log lines carry its VM from its first (runtime/log_format.hpp).
  port_log_context().set(port.name, port.owner);
  std::string error;
  if (!controller->start(error)) {
    port_log_context().forget(port.name);
    return error;
  }
  spdlog::info("port {}: {} socket {} mac {} ({}{})", port.name, vhost::to_string(port.mode),
               port.socket, port.mac ? port.mac->to_string() : "none yet",
               dataplane::to_string(port.mac_policy),
               at_start == controller::MacAtStart::kWaits
                   ? "; held by port " + port_with_mac(*port.mac)->config().name + " of its VM"
                   : std::string());
  if (auto* uplink = uplink_of(port)) uplink->add_guest(port.name, controller->mac(), port.mtu);
  ports_.emplace(port.name, std::move(controller));
  return {};
}

const controller::GuestPortController* Daemon::port_with_mac(const net::MacAddress& mac) const {
  for (const auto& [name, port] : ports_)
    if (port->mac() == mac) return port.get();
  return nullptr;
}

std::optional<dataplane::MacRefusal> Daemon::refusal_to_learn(const net::MacAddress& mac,
                                                              std::string& why) const {
  using dataplane::MacRefusal;
  const std::string text = mac.to_string();
  const MacLearningConfig& learning = config_.mac_learning;
  if (!learning.prefixes.empty() &&
      std::none_of(learning.prefixes.begin(), learning.prefixes.end(),
                   [&](const net::MacPrefix& p) { return p.contains(mac); })) {
    why = text + " is outside mac_learning.prefixes";
    return MacRefusal::kOutsidePrefixes;
  }
  // Every uplink's link monitor knows every interface of the namespace.
  for (const auto& [name, uplink] : uplinks_)
    if (const auto ifname = uplink->node_interface_with(mac)) {
      why = text + " is the address of the node's interface " + *ifname;
      return MacRefusal::kNodeAddress;
    }
  if (learning.wire_source_age_s != 0)
    for (const auto& [name, uplink] : uplinks_)
      if (const auto age = uplink->wire_source_age(mac);
          age && *age < std::chrono::seconds(learning.wire_source_age_s)) {
        why = fmt::format("{} sent a frame that arrived on uplink {} {} s ago", text, name,
                          std::chrono::duration_cast<std::chrono::seconds>(*age).count());
        return MacRefusal::kSeenOnWire;
      }
  return std::nullopt;
}

std::optional<dataplane::MacRefusal> Daemon::allow_learned_mac(
    const controller::GuestPortController& port, const net::MacAddress& mac, std::string& why) {
  using dataplane::MacRefusal;
  const std::string text = mac.to_string();
  // A fixed port asks only for its configured MAC, which orchestration gave
  // it: only whether another port holds it is left to decide.
  if (port.config().mac_policy == dataplane::MacPolicy::kFixed) {
    if (port.config().mac != mac) {
      why = text + " is not the port's configured MAC";
      return MacRefusal::kAnotherPort;
    }
  } else if (const auto refusal = refusal_to_learn(mac, why)) {
    return refusal;
  }
  for (const auto& p : config_.ports)
    if (p.name != port.config().name && p.mac == mac &&
        !controller::share_fixed_mac(p, port.config())) {
      why = text + " is configured for port " + p.name;
      return MacRefusal::kAnotherPort;
    }
  if (const auto* owner = port_with_mac(mac); owner != nullptr && owner != &port) {
    // Live migration on one node: the MAC moves here only on the evidence
    // mac_handover.hpp asks for.
    const auto now = controller::MacHandovers::Clock::now();
    if (std::string refused = handovers_.refusal(port, *owner, mac, now); !refused.empty()) {
      why = text + " is port " + owner->config().name + "'s; " + refused;
      return MacRefusal::kAnotherPort;
    }
    const std::string from = owner->config().name;
    auto it = ports_.find(from);
    if (it != ports_.end()) {
      if (auto* uplink = uplink_of(owner->config())) uplink->set_guest_mac(from, {});
      it->second->release_mac();
    }
    handovers_.record(mac, from, port.config().name, now);
    spdlog::info("port {}: takes MAC {} over from port {} (a migration of VM {}/{})",
                 port.config().name, text, from, port.config().owner->ns, port.config().owner->vm);
  }
  if (auto* uplink = uplink_of(port.config())) uplink->set_guest_mac(port.config().name, mac);
  return std::nullopt;
}

const controller::GuestPortController* Daemon::find_port(const std::string& name) const {
  auto it = ports_.find(name);
  return it == ports_.end() ? nullptr : it->second.get();
}

controller::GuestPortController* Daemon::find_port(const std::string& name) {
  auto it = ports_.find(name);
  return it == ports_.end() ? nullptr : it->second.get();
}

std::optional<ConfigError> Daemon::add_port(const PortConfig& port) {
  return add_port_from(port, true);
}

std::optional<ConfigError> Daemon::add_port_from(const PortConfig& port, bool run_time) {
  auto next = with_port_added(config_, port);
  if (!next) return next.error();
  if (port.mac)
    if (const auto* owner = port_with_mac(*port.mac);
        owner != nullptr && !controller::share_fixed_mac(port, owner->config()))
      return ConfigError{ConfigErrorKind::kMacInUse,
                         "params.mac: " + port.mac->to_string() + " is the learned MAC of port \"" +
                             owner->config().name + "\"",
                         {}};
  const Config previous = config_;
  config_ = std::move(next.value());
  if (std::string error = open_port(port, MtuAbove::kRefuse); !error.empty()) {
    config_ = previous;
    return ConfigError{ConfigErrorKind::kOperationFailed, "port " + port.name + ": " + error, {}};
  }
  if (run_time) run_time_ports_.insert(port.name);
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
  run_time_ports_.erase(name);
  spdlog::info("port {}: removed", name);
  port_log_context().forget(name);
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
  if (rebalancer_) rebalancer_->follow_tunables();
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
  config_.log.level = level;  // until the next restart or reload: the file's is the lasting one
  spdlog::set_level(to_spdlog(level));
}

RunTimeState Daemon::run_time_state() const {
  RunTimeState state;
  for (const auto& u : config_.uplinks)
    if (run_time_uplinks_.count(u.name)) state.uplinks.push_back(u);
  for (const auto& p : config_.ports)
    if (run_time_ports_.count(p.name)) state.ports.push_back(p);
  return state;
}

void Daemon::persist() {
  if (!config_.state_file) return;
  if (std::string error = save_state_file(run_time_state(), *config_.state_file); !error.empty())
    spdlog::error("cannot save state to {}: {}", *config_.state_file, error);
}

namespace {

// Whether `a` differs from `b` only in what is applied in place.
bool same_but_applied_in_place(PortConfig a, const PortConfig& b) {
  a.tunables = b.tunables;
  return a == b;
}
bool same_but_applied_in_place(UplinkConfig a, const UplinkConfig& b) {
  a.tunables = b.tunables;
  a.l2_domain = b.l2_domain;
  return a == b;
}

}  // namespace

void Daemon::set_listeners(const ControlConfig& control, const MetricsConfig& metrics) {
  config_.control = control;
  config_.metrics = metrics;
}

std::vector<std::string> Daemon::reload(const Config& next) {
  std::vector<std::string> problems;
  auto problem = [&](std::string text) {
    spdlog::error("reload: {}", text);
    problems.push_back(std::move(text));
  };
  std::vector<std::string> restart_needed;
  if (!(next.threads == config_.threads)) restart_needed.push_back("threads");
  if (next.bpf_object != config_.bpf_object) restart_needed.push_back("bpf_object");
  if (!(next.security == started_security_)) restart_needed.push_back("security");
  for (const auto& section : restart_needed)
    problem(section + " changed: takes effect at the next start");
  config_.state_file = next.state_file;
  config_.security = next.security;  // in force from the next start
  if (!(next.mac_learning == config_.mac_learning)) {
    config_.mac_learning = next.mac_learning;  // the next decision follows it
    for (auto& [name, port] : ports_) port->set_learn_request_rate(config_.mac_learning.requests);
    spdlog::info("reload: mac_learning changed");
  }

  // What the file had, by name (everything not added at run time).
  std::map<std::string, PortConfig> old_ports;
  for (const auto& p : config_.ports)
    if (!run_time_ports_.count(p.name)) old_ports.emplace(p.name, p);
  std::map<std::string, UplinkConfig> old_uplinks;
  for (const auto& u : config_.uplinks)
    if (!run_time_uplinks_.count(u.name)) old_uplinks.emplace(u.name, u);

  // Uplinks to re-create or remove, and the ports on them. One the file no
  // longer has stays while ports added at run time (a VM's DRA claim) use
  // it, as uplink.remove refuses: they would be lost with it.
  std::set<std::string> uplinks_out;
  for (const auto& [name, u] : old_uplinks) {
    const UplinkConfig* n = next.find_uplink(name);
    if (n == nullptr) {
      std::string users;
      for (const auto& p : config_.ports)
        if (run_time_ports_.count(p.name) && next.find_port(p.name) == nullptr && p.uplink == name)
          users.append(users.empty() ? "" : ", ").append(p.name);
      if (!users.empty()) {
        // From now on it is a run-time uplink: kept in the state file with
        // its ports, so that a restart brings both back.
        run_time_uplinks_.insert(name);
        problem(fmt::format(
            "uplink {} not removed: ports added at run time use it ({}); it is kept as a "
            "run-time uplink until they are removed",
            name, users));
        continue;
      }
    }
    if (n == nullptr || !same_but_applied_in_place(*n, u)) uplinks_out.insert(name);
  }
  for (const auto& u : next.uplinks)
    if (run_time_uplinks_.count(u.name)) uplinks_out.insert(u.name);  // the file wins
  std::vector<PortConfig> readd;  // run-time ports on an uplink being re-created
  std::set<std::string> ports_out;
  for (const auto& p : config_.ports) {
    const bool run_time = run_time_ports_.count(p.name) != 0;
    const PortConfig* n = next.find_port(p.name);
    const bool on_gone_uplink = p.uplink && uplinks_out.count(*p.uplink);
    if (run_time) {
      if (n != nullptr) {
        ports_out.insert(p.name);  // the file wins
      } else if (on_gone_uplink) {
        ports_out.insert(p.name);
        readd.push_back(p);
      }
    } else if (n == nullptr || !same_but_applied_in_place(*n, p) || on_gone_uplink) {
      ports_out.insert(p.name);
    }
  }
  for (const auto& name : ports_out)
    if (auto e = remove_port(name)) problem("port " + name + ": " + e->message);
  for (const auto& name : uplinks_out)
    if (auto e = remove_uplink(name)) problem("uplink " + name + ": " + e->message);

  if (next.socket_dirs != config_.socket_dirs) {
    // Only if every port that stays lies below the new directories.
    std::string outside;
    for (const auto& p : config_.ports)
      if (!sys::socket_root_of(p.socket, next.socket_dirs)) outside = p.name;
    if (outside.empty()) {
      config_.socket_dirs = next.socket_dirs;
      sys::set_port_socket_dirs(config_.socket_dirs);
    } else {
      problem("socket_dirs not changed: port " + outside + "'s socket is not below the new ones");
    }
  }
  if (!(next.tunables == config_.tunables)) {
    config_.tunables = next.tunables;
    spdlog::info("reload: global tunables changed");
  }
  // Overrides of what stays: taken from the file as they are.
  for (auto& u : config_.uplinks)
    if (const UplinkConfig* n = next.find_uplink(u.name); n && !run_time_uplinks_.count(u.name)) {
      u.tunables = n->tunables;
      if (u.l2_domain != n->l2_domain)
        spdlog::info("reload: uplink {}: l2_domain {}", u.name, n->domain());
      u.l2_domain = n->l2_domain;
    }
  publish_l2_domains();
  for (auto& p : config_.ports)
    if (const PortConfig* n = next.find_port(p.name); n && !run_time_ports_.count(p.name))
      p.tunables = n->tunables;
  apply_tunables();

  for (const auto& u : next.uplinks)
    if (config_.find_uplink(u.name) == nullptr)
      if (auto e = add_uplink_from(u, false)) problem(e->message);
  for (const auto& p : next.ports)
    if (config_.find_port(p.name) == nullptr)
      if (auto e = add_port_from(p, false)) problem(e->message);
  for (const auto& p : readd)
    if (auto e = add_port_from(p, true)) problem(e->message);
  persist();
  config_source_.problems = problems;
  config_source_.restart_needed = std::move(restart_needed);
  spdlog::info("reload: {} service thread(s), {} uplink(s), {} port(s){}",
               dataplane_->thread_count(), uplinks_.size(), ports_.size(),
               problems.empty() ? "" : ", " + std::to_string(problems.size()) + " problem(s)");
  return problems;
}

}  // namespace xdpvhost::daemon

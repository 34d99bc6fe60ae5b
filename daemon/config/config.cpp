// Parsing and checking the configuration.

#include "config/config.hpp"

#include "json_schema/json_nesting.hpp"

#include <cstdio>
#include <string>

#include "config/config_rules.hpp"
#include "schemas/schema_registry.hpp"
#include "sys/enum_names.hpp"
#include "sys/socket_directory.hpp"
#include "sys/unix_socket_path.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

std::uint32_t u32(const json& j) {
  return j.get<std::uint32_t>();
}

std::optional<std::uint32_t> opt_u32(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return u32(*it);
}

// Thread indexes: the schema bounds them far below 2^16.
std::optional<std::uint16_t> opt_u16(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return it->get<std::uint16_t>();
}

std::optional<std::string> opt_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return it->get<std::string>();
}

// The from_json functions trust that `j` validated against its schema.

dataplane::PortTunableOverrides port_tunables_from_json(const json& j) {
  dataplane::PortTunableOverrides t;
  t.signal_batch = opt_u32(j, "signal_batch");
  t.rx_burst = opt_u32(j, "rx_burst");
  t.tx_burst = opt_u32(j, "tx_burst");
  t.flood_rate = opt_u32(j, "flood_rate");
  return t;
}

dataplane::UplinkTunableOverrides uplink_tunables_from_json(const json& j) {
  dataplane::UplinkTunableOverrides t;
  t.tx_inflight_max = opt_u32(j, "tx_inflight_max");
  if (auto it = j.find("napi_busy_poll"); it != j.end()) t.napi_busy_poll = it->get<bool>();
  t.busy_poll_budget = opt_u32(j, "busy_poll_budget");
  return t;
}

Tunables tunables_from_json(const json& j) {
  Tunables t;
  t.busy_poll_us = opt_u32(j, "busy_poll_us").value_or(t.busy_poll_us);
  t.signal_batch = opt_u32(j, "signal_batch").value_or(t.signal_batch);
  t.rx_burst = opt_u32(j, "rx_burst").value_or(t.rx_burst);
  t.tx_burst = opt_u32(j, "tx_burst").value_or(t.tx_burst);
  t.tx_inflight_max = opt_u32(j, "tx_inflight_max").value_or(t.tx_inflight_max);
  t.napi_busy_poll = j.value("napi_busy_poll", t.napi_busy_poll);
  t.busy_poll_budget = opt_u32(j, "busy_poll_budget").value_or(t.busy_poll_budget);
  t.flood_rate = opt_u32(j, "flood_rate").value_or(t.flood_rate);
  if (auto mode = opt_string(j, "rebalance"))
    t.rebalance = sys::value_named(dataplane::kRebalanceModeNames, *mode).value_or(t.rebalance);
  t.rebalance_interval_s = opt_u32(j, "rebalance_interval_s").value_or(t.rebalance_interval_s);
  t.rebalance_threshold_pct =
      opt_u32(j, "rebalance_threshold_pct").value_or(t.rebalance_threshold_pct);
  t.rebalance_margin_pct = opt_u32(j, "rebalance_margin_pct").value_or(t.rebalance_margin_pct);
  return t;
}

PortConfig port_from_json(const json& j) {
  PortConfig p;
  p.name = j.at("name").get<std::string>();
  p.socket = j.at("socket").get<std::string>();
  if (auto mode = opt_string(j, "mode")) p.mode = vhost::parse_socket_mode(*mode).value_or(p.mode);
  if (auto mac = opt_string(j, "mac")) p.mac = net::MacAddress::parse(*mac);
  // Without a policy: the configured MAC, or the first one the guest sends from.
  p.mac_policy = p.mac ? dataplane::MacPolicy::kFixed : dataplane::MacPolicy::kLearn;
  if (auto policy = opt_string(j, "mac_policy"))
    p.mac_policy = dataplane::parse_mac_policy(*policy).value_or(p.mac_policy);
  if (auto it = j.find("owner"); it != j.end())
    p.owner = controller::PortOwner{it->value("namespace", ""), it->value("vm", ""),
                                    it->value("claim", "")};
  p.uplink = opt_string(j, "uplink");
  p.queue_pairs = opt_u32(j, "queues").value_or(p.queue_pairs);
  p.mtu = opt_u32(j, "mtu").value_or(p.mtu);
  p.thread = opt_u16(j, "thread");
  if (auto it = j.find("tunables"); it != j.end()) p.tunables = port_tunables_from_json(*it);
  return p;
}

UplinkConfig uplink_from_json(const json& j) {
  UplinkConfig u;
  u.name = j.at("name").get<std::string>();
  u.interface = j.at("interface").get<std::string>();
  if (auto it = j.find("queues"); it != j.end() && it->is_array()) {
    u.queues.emplace();
    for (const auto& q : *it) u.queues->push_back(u32(q));
  }
  if (auto bind = opt_string(j, "bind")) u.bind = xsk::parse_bind_mode(*bind).value_or(u.bind);
  u.frame_size = opt_u32(j, "frame_size").value_or(u.frame_size);
  u.ring_size = opt_u32(j, "ring_size").value_or(u.ring_size);
  u.thread = opt_u16(j, "thread");
  u.l2_domain = opt_string(j, "l2_domain");
  if (auto it = j.find("tunables"); it != j.end()) u.tunables = uplink_tunables_from_json(*it);
  return u;
}

Config config_from_json(const json& j) {
  Config c;
  if (auto it = j.find("ports"); it != j.end()) {
    for (const auto& p : *it) c.ports.push_back(port_from_json(p));
  }
  if (auto it = j.find("uplinks"); it != j.end()) {
    for (const auto& u : *it) c.uplinks.push_back(uplink_from_json(u));
  }
  if (auto it = j.find("tunables"); it != j.end()) c.tunables = tunables_from_json(*it);
  if (auto it = j.find("threads"); it != j.end()) {
    c.threads.count = opt_u32(*it, "count").value_or(c.threads.count);
    if (auto cpus = it->find("cpus"); cpus != it->end()) {
      for (const auto& cpu : *cpus) c.threads.cpus.push_back(u32(cpu));
    }
  }
  if (auto it = j.find("control"); it != j.end()) {
    c.control.socket = it->value("socket", c.control.socket);
    if (auto mode = it->find("mode"); mode != it->end()) {
      c.control.mode = static_cast<std::uint32_t>(std::stoul(mode->get<std::string>(), nullptr, 8));
    }
    c.control.group = opt_string(*it, "group");
    c.control.idle_timeout_s = opt_u32(*it, "idle_timeout_s").value_or(c.control.idle_timeout_s);
  }
  if (auto it = j.find("socket_dirs"); it != j.end())
    for (const auto& d : *it) c.socket_dirs.push_back(d.get<std::string>());
  if (auto it = j.find("security"); it != j.end())
    c.security.seccomp = it->value("seccomp", c.security.seccomp);
  if (auto it = j.find("mac_learning"); it != j.end()) {
    if (auto prefixes = it->find("prefixes"); prefixes != it->end())
      for (const auto& p : *prefixes)  // checked by check_mac_prefixes()
        if (auto prefix = net::MacPrefix::parse(p.get<std::string>()))
          c.mac_learning.prefixes.push_back(*prefix);
    c.mac_learning.wire_source_age_s =
        opt_u32(*it, "wire_source_age_s").value_or(c.mac_learning.wire_source_age_s);
    auto& requests = c.mac_learning.requests;
    requests.per_second = opt_u32(*it, "relearn_per_s").value_or(requests.per_second);
    requests.burst = opt_u32(*it, "relearn_burst").value_or(requests.burst);
  }
  if (auto it = j.find("metrics"); it != j.end()) {
    c.metrics.listen = it->value("listen", "");
    c.metrics.zero_breakdowns = it->value("zero_breakdowns", false);
  }
  if (auto it = j.find("log"); it != j.end()) {
    c.log.level = parse_log_level(it->value("level", "info")).value_or(LogLevel::kInfo);
    c.log.format = parse_log_format(it->value("format", "text")).value_or(LogFormat::kText);
  }
  c.state_file = opt_string(j, "state_file");
  c.bpf_object = opt_string(j, "bpf_object");
  return c;
}

// A prefix of the schema's shape may still set bits past its length.
std::optional<ConfigError> check_mac_prefixes(const json& document) {
  const auto learning = document.find("mac_learning");
  if (learning == document.end()) return std::nullopt;
  const auto prefixes = learning->find("prefixes");
  if (prefixes == learning->end()) return std::nullopt;
  for (std::size_t i = 0; i < prefixes->size(); ++i) {
    const auto text = (*prefixes)[i].get<std::string>();
    if (!net::MacPrefix::parse(text))
      return config_rules::field_error(
          ConfigErrorKind::kInvalid, "mac_learning", "prefixes[" + std::to_string(i) + "]",
          config_rules::json_quoted(text) + " sets bits past its length (aa:bb:cc:00:00:00/24)");
  }
  return std::nullopt;
}

ConfigError internal_error(const std::exception& e) {
  ConfigError err;
  err.kind = ConfigErrorKind::kInvalid;
  err.message = std::string("unexpected error: ") + e.what();
  return err;
}

// "host:port" with the port in range (the schema checked the shape).
std::string check_listen(const std::string& listen) {
  if (listen.empty()) return "";
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return "needs host:port";
  unsigned long port = std::stoul(listen.substr(colon + 1));
  if (port > 65535) return "port " + std::to_string(port) + " is above 65535";
  return "";
}

}  // namespace

constexpr sys::EnumNames<LogLevel, 6> kLogLevelNames{{
    {LogLevel::kTrace, "trace"},
    {LogLevel::kDebug, "debug"},
    {LogLevel::kInfo, "info"},
    {LogLevel::kWarn, "warn"},
    {LogLevel::kError, "error"},
    {LogLevel::kOff, "off"},
}};
static_assert(sys::in_enum_order(kLogLevelNames, 6));

std::string_view to_string(LogLevel level) {
  return sys::name_of(kLogLevelNames, level, "info");
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
  return sys::value_named(kLogLevelNames, text);
}

constexpr sys::EnumNames<LogFormat, 2> kLogFormatNames{{
    {LogFormat::kText, "text"},
    {LogFormat::kJson, "json"},
}};
static_assert(sys::in_enum_order(kLogFormatNames, 2));

std::string_view to_string(LogFormat format) {
  return sys::name_of(kLogFormatNames, format, "text");
}

std::optional<LogFormat> parse_log_format(std::string_view text) {
  return sys::value_named(kLogFormatNames, text);
}

const PortConfig* Config::find_port(std::string_view name) const {
  for (const auto& p : ports) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const UplinkConfig* Config::find_uplink(std::string_view name) const {
  for (const auto& u : uplinks) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

std::string check_socket_path(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.find('\0') != std::string_view::npos) return "holds a NUL byte";
  if (path.size() > sys::kMaxUnixSocketPath) {
    return "is " + std::to_string(path.size()) +
           " bytes long, a unix socket path (sun_path) holds at most " +
           std::to_string(sys::kMaxUnixSocketPath);
  }
  return sys::check_normal_path(path);
}

std::optional<ConfigError> check_config(const Config& config) {
  using config_rules::field_error;
  try {
    // Everything the schema says, also for a Config built in code.
    auto errors = validate(SchemaRegistry::embedded().config(), to_json(config));
    if (!errors.empty()) return config_rules::schema_error(errors);

    if (!config.threads.cpus.empty() && config.threads.cpus.size() != config.threads.count) {
      return field_error(ConfigErrorKind::kInvalid, "threads", "cpus",
                         std::to_string(config.threads.cpus.size()) +
                             " entries, but threads.count is " +
                             std::to_string(config.threads.count) + " (one CPU per thread)");
    }
    if (std::string problem = check_socket_path(config.control.socket); !problem.empty()) {
      return field_error(ConfigErrorKind::kSocketPath, "control", "socket", problem);
    }
    if (config.control.mode & 0002) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", config.control.mode & 07777);
      return field_error(ConfigErrorKind::kInvalid, "control", "mode",
                         std::string(mode) +
                             " lets every local user drive the daemon; use 0660 (or 0600) and "
                             "control.group");
    }
    for (std::size_t i = 0; i < config.socket_dirs.size(); ++i) {
      if (std::string problem = sys::check_normal_path(config.socket_dirs[i]); !problem.empty())
        return field_error(ConfigErrorKind::kInvalid, "socket_dirs[" + std::to_string(i) + "]", "",
                           config_rules::json_quoted(config.socket_dirs[i]) + " " + problem);
    }
    if (std::string problem = check_listen(config.metrics.listen); !problem.empty()) {
      return field_error(ConfigErrorKind::kInvalid, "metrics", "listen", problem);
    }
    // Uplinks first: ports refer to them.
    Config so_far = config;
    so_far.ports.clear();
    so_far.uplinks.clear();
    for (std::size_t i = 0; i < config.uplinks.size(); ++i) {
      std::string where = "uplinks[" + std::to_string(i) + "]";
      if (auto e = config_rules::check_new_uplink(so_far, config.uplinks[i], where)) return e;
      so_far.uplinks.push_back(config.uplinks[i]);
    }
    for (std::size_t i = 0; i < config.ports.size(); ++i) {
      std::string where = "ports[" + std::to_string(i) + "]";
      if (auto e = config_rules::check_new_port(so_far, config.ports[i], where)) return e;
      so_far.ports.push_back(config.ports[i]);
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> parse_config(const json& document) {
  try {
    auto errors = validate(SchemaRegistry::embedded().config(), document);
    if (!errors.empty()) return config_rules::schema_error(errors);
    if (auto e = check_mac_prefixes(document)) return std::move(*e);
    Config config = config_from_json(document);
    if (auto e = check_config(config)) return std::move(*e);
    return config;
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> parse_config_text(std::string_view text,
                                       const EnvironmentLookup* environment) {
  if (json_nesting_depth(text, kMaxJsonNesting) > kMaxJsonNesting)
    return ConfigError{ConfigErrorKind::kSyntax,
                       "nested deeper than " + std::to_string(kMaxJsonNesting) + " levels",
                       {}};
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 3: ..." without the tag.
    std::string what = e.what();
    auto bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    return ConfigError{ConfigErrorKind::kSyntax, "not valid JSON: " + what, {}};
  } catch (const std::exception& e) {
    return ConfigError{ConfigErrorKind::kSyntax, std::string("not valid JSON: ") + e.what(), {}};
  }
  if (environment != nullptr)
    if (std::string error = expand_environment(document, *environment); !error.empty())
      return ConfigError{ConfigErrorKind::kInvalid, error, {}};
  return parse_config(document);
}

ConfigResult<PortConfig> parse_port(const json& port, std::string_view path) {
  try {
    const Schema* schema = SchemaRegistry::embedded().config_def("port");
    auto errors = validate(*schema, port, path);
    if (!errors.empty()) return config_rules::schema_error(errors);
    PortConfig p = port_from_json(port);
    if (auto e = config_rules::check_port_fields(p, path)) return std::move(*e);
    return p;
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<UplinkConfig> parse_uplink(const json& uplink, std::string_view path) {
  try {
    const Schema* schema = SchemaRegistry::embedded().config_def("uplink");
    auto errors = validate(*schema, uplink, path);
    if (!errors.empty()) return config_rules::schema_error(errors);
    return uplink_from_json(uplink);
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

}  // namespace xdpvhost::daemon

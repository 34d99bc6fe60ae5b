#pragma once
// The daemon's configuration as typed values: what proto/config.schema.json
// describes, with defaults applied. Loading validates against the embedded
// schema first (errors name the field: `ports[1]: unknown field "sokcet"`),
// then checks what a schema cannot: unique names, MACs and socket paths,
// references between ports, uplinks and threads, sun_path length, unicast
// MACs. to_json() gives back a document that validates and parses to an
// equal Config; the daemon persists it as its state file.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_result.hpp"
#include "config/config_environment.hpp"
#include "controller/port_config.hpp"
#include "controller/uplink_config.hpp"
#include "dataplane/mac_policy.hpp"
#include "dataplane/tunables.hpp"
#include "net/mac_prefix.hpp"

namespace xdpvhost::daemon {

using PortConfig = controller::PortConfig;
using UplinkConfig = controller::UplinkConfig;
using Tunables = dataplane::Tunables;

enum class LogLevel : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// The schema's spelling: "warn", ...
std::string_view to_string(LogLevel level);
std::optional<LogLevel> parse_log_level(std::string_view text);

// How log lines look (runtime/log_format.hpp): "text" or "json".
enum class LogFormat : std::uint8_t { kText, kJson };
std::string_view to_string(LogFormat format);
std::optional<LogFormat> parse_log_format(std::string_view text);

struct ThreadsConfig {
  std::uint32_t count = 1;
  std::vector<std::uint32_t> cpus;  // empty: not pinned; else one per thread
  bool operator==(const ThreadsConfig&) const = default;
};

struct ControlConfig {
  std::string socket = "/run/xdpvhost/control.sock";
  std::uint32_t mode = 0660;  // permission bits of the socket file (never world-writable)
  std::optional<std::string> group;
  std::uint32_t idle_timeout_s = 60;
  bool operator==(const ControlConfig&) const = default;
};

struct MetricsConfig {
  std::string listen;  // "host:port" or "[v6]:port"; empty: no exposer
  // Breakdowns by reason and by queue pair list their zero series too (an
  // idle port then costs about 60 series instead of 19).
  bool zero_breakdowns = false;
  bool operator==(const MetricsConfig&) const = default;
};

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
  bool operator==(const LogConfig&) const = default;
};

struct SecurityConfig {
  bool seccomp = true;  // the allow-list and no_new_privs after set-up
  bool operator==(const SecurityConfig&) const = default;
};

// What guests of learning ports (mac_policy learn, learn-move) may take as
// their MAC, beyond what is never theirs (another port's MAC, a node
// interface's address).
struct MacLearningConfig {
  std::vector<net::MacPrefix> prefixes;   // empty: any MAC
  std::uint32_t wire_source_age_s = 300;  // a source seen on an uplink since: not learned; 0: off
  dataplane::LearnRequestRate requests;   // relearn_per_s, relearn_burst
  bool operator==(const MacLearningConfig&) const = default;
};

struct Config {
  std::vector<PortConfig> ports;
  std::vector<UplinkConfig> uplinks;
  Tunables tunables;
  ThreadsConfig threads;
  ControlConfig control;
  MetricsConfig metrics;
  LogConfig log;
  std::vector<std::string> socket_dirs;  // empty: port sockets anywhere (no symlinks)
  SecurityConfig security;
  MacLearningConfig mac_learning;
  std::optional<std::string> state_file;
  std::optional<std::string> bpf_object;
  bool operator==(const Config&) const = default;

  // nullptr if there is none of that name.
  const PortConfig* find_port(std::string_view name) const;
  const UplinkConfig* find_uplink(std::string_view name) const;
};

// Reads and parses a config file, its "${NAME}"s expanded from `environment`
// (config_environment.hpp). Messages start with the file's path.
ConfigResult<Config> load_config_file(const std::string& path,
                                      const EnvironmentLookup& environment = process_environment());
// Parses config text (JSON); with `environment`, "${NAME}"s expanded first.
ConfigResult<Config> parse_config_text(std::string_view text,
                                       const EnvironmentLookup* environment = nullptr);
// Validates against config.schema.json, applies defaults, checks every rule.
ConfigResult<Config> parse_config(const nlohmann::json& document);

// One port / uplink object as in the config's "ports" / "uplinks" (the
// params of port.add / uplink.add): validated against its schema definition,
// defaults applied, the MAC and socket path checked. Error paths start with
// `path` ("params" gives "params.mac: ..."). Uniqueness against other ports
// is checked when it is added to a Config (config_change.hpp).
ConfigResult<PortConfig> parse_port(const nlohmann::json& port, std::string_view path = "params");
ConfigResult<UplinkConfig> parse_uplink(const nlohmann::json& uplink,
                                        std::string_view path = "params");

// Every rule across the config (names, MACs, sockets, references, threads);
// nullopt when it holds. parse_config runs it; so does every config change.
std::optional<ConfigError> check_config(const Config& config);

// "" if `path` can be bound as a unix socket (at most 107 bytes, no NUL,
// absolute and normal: no ".", ".." or empty component), else the problem,
// e.g. "is 130 bytes, sun_path holds at most 107".
std::string check_socket_path(std::string_view path);

// Documents that validate against the schema; every default is written out,
// absent optional members are left out.
nlohmann::json to_json(const Config& config);
nlohmann::json to_json(const PortConfig& port);
nlohmann::json to_json(const controller::PortOwner& owner);
nlohmann::json to_json(const UplinkConfig& uplink);
nlohmann::json to_json(const Tunables& tunables);
nlohmann::json to_json(const dataplane::PortTunableOverrides& overrides);    // only those set
nlohmann::json to_json(const dataplane::UplinkTunableOverrides& overrides);  // only those set

// The state file: the ports and uplinks added over the control socket
// (port.add, uplink.add) and not removed since. Written as a config
// document that holds only "ports" and "uplinks"; read back entry by entry
// (an older state file, a whole effective config, is read the same way).
struct RunTimeState {
  std::vector<PortConfig> ports;
  std::vector<UplinkConfig> uplinks;
  bool operator==(const RunTimeState&) const = default;
};

struct LoadedState {
  RunTimeState state;
  std::vector<std::string> skipped;  // entries that do not parse, with why
};

// An absent file is an empty state. Errors: the file cannot be read, or is
// not a JSON object.
ConfigResult<LoadedState> load_state_file(const std::string& path);
nlohmann::json to_json(const RunTimeState& state);

// Writes `document` to `path` atomically: a temporary file made by
// mkostemp in the same directory (mode 0600, O_EXCL: a symlink there is not
// followed), fsync, rename over `path` (a symlink at `path` is replaced,
// not followed), fsync of the directory. Returns "" or the problem.
std::string save_json_file(const nlohmann::json& document, const std::string& path);
// save_json_file(to_json(...)).
std::string save_config_file(const Config& config, const std::string& path);
std::string save_state_file(const RunTimeState& state, const std::string& path);

}  // namespace xdpvhost::daemon

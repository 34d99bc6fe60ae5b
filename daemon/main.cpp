// xdpvhostd: serves virtio-net devices to guests over vhost-user and
// switches their frames, locally and through AF_XDP uplinks.
//
// Start-up, in this order: umask 027 and the fd limit; SIGTERM, SIGINT and
// SIGHUP handled (a signal during start-up is acted on as soon as it is
// done); the config file, then the state file's ports and uplinks on top;
// the datapath, uplinks and ports; the control socket; the metrics
// listener; then every thread drops the capabilities it no longer needs,
// no_new_privs and the seccomp allow-list go on, and the service manager
// hears READY=1.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>

#include "config/config.hpp"
#include "control/control_api.hpp"
#include "control/control_server.hpp"
#include "control/rpc_dispatcher.hpp"
#include "listen_address.hpp"
#include "metrics_service.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/config_follower.hpp"
#include "runtime/daemon.hpp"
#include "runtime/heap_trimmer.hpp"
#include "runtime/log_format.hpp"
#include "runtime/log_level.hpp"
#include "runtime/process_setup.hpp"
#include "runtime/seccomp_filter.hpp"
#include "runtime/service_notifier.hpp"

namespace {

using namespace xdpvhost::daemon;

void print_config_error(const ConfigError& error) {
  std::cerr << "xdpvhostd: " << error.message << "\n";
  for (std::size_t i = 1; i < error.details.size(); ++i)
    std::cerr << "  " << error.details[i] << "\n";
}

// The control socket and the metrics listener: made from the config, made
// again when a reload changes their settings.
class Listeners {
 public:
  Listeners(boost::asio::io_context& io, Daemon& daemon, RpcDispatcher& dispatcher)
      : io_(io), daemon_(daemon), dispatcher_(dispatcher) {}

  bool start_control(const ControlConfig& control, std::string& error) {
    ControlServer::Options options;
    options.path = control.socket;
    options.mode = control.mode;
    options.group = control.group;
    options.idle_timeout = std::chrono::seconds(control.idle_timeout_s);
    const std::size_t limit = options.max_request_bytes;
    auto server = std::make_unique<ControlServer>(
        io_, options, [this](std::string_view line) { return dispatcher_.handle(line); },
        [this, limit] { return dispatcher_.too_large(limit); });
    if (!server->start(error)) return false;
    control_ = std::move(server);
    control_config_ = control;
    spdlog::info("control socket {}", control.socket);
    return true;
  }

  bool start_metrics(const MetricsConfig& metrics, std::string& error) {
    auto service = std::make_unique<metrics::MetricsService>(io_, daemon_);
    if (!service->start(metrics.listen, error)) return false;
    metrics_ = std::move(service);
    metrics_config_ = metrics;
    return true;
  }

  // Re-made if changed; if the new one cannot be made, the old one is made
  // again (the same settings bound before).
  void reload(const Config& next) {
    if (!(next.control == control_config_)) {
      const ControlConfig previous = control_config_;
      control_.reset();  // the old socket file goes first: the path may be the same
      if (std::string error; !start_control(next.control, error)) {
        spdlog::error("reload: {}; keeping the control socket as it was", error);
        if (std::string again; !start_control(previous, again))
          spdlog::critical("reload: control socket lost: {}", again);
      }
    }
    metrics_config_.zero_breakdowns = next.metrics.zero_breakdowns;  // read at each render
    if (next.metrics.listen != metrics_config_.listen) {
      const MetricsConfig previous = metrics_config_;
      metrics_.reset();
      if (std::string error; !start_metrics(next.metrics, error)) {
        spdlog::error("reload: {}; keeping metrics.listen {}", error, previous.listen);
        if (std::string again; !start_metrics(previous, again))
          spdlog::critical("reload: metrics listener lost: {}", again);
      }
    }
    daemon_.set_listeners(control_config_, metrics_config_);
  }

  void stop() {
    control_.reset();
    metrics_.reset();
  }

 private:
  boost::asio::io_context& io_;
  Daemon& daemon_;
  RpcDispatcher& dispatcher_;
  std::unique_ptr<ControlServer> control_;
  ControlConfig control_config_;
  std::unique_ptr<metrics::MetricsService> metrics_;
  MetricsConfig metrics_config_;
};

bool privileged_port(const std::string& listen) {
  if (listen.empty()) return false;
  std::string error;
  auto address = metrics::parse_listen_address(listen, error);
  return address && address->port != 0 && address->port < 1024;
}

// Every thread keeps only what run time needs (capabilities.hpp); then the
// seccomp filter. Returns "" or the problem.
std::string confine(Daemon& daemon, const Config& config, bool seccomp) {
  CapabilityNeeds needs;
  needs.control_group = config.control.group.has_value();
  needs.privileged_metrics = privileged_port(config.metrics.listen);
  const std::vector<std::string> keep = capabilities_to_keep(needs);
  auto& dp = daemon.dataplane();
  for (std::uint16_t t = 0; t < dp.thread_count(); ++t) {
    // By value: a thread that misses call()'s deadline may run it later.
    std::string error = dp.thread(t).call([keep] { return drop_capabilities(keep); });
    if (dp.thread(t).stalled()) error = "stalled; its capabilities were not dropped";
    if (!error.empty()) return "service thread " + std::to_string(t) + ": " + error;
  }
  if (std::string error = drop_capabilities(keep); !error.empty()) return error;
  spdlog::info("capabilities kept: {}", effective_capabilities());
  // Started from here, the watcher thread holds what this thread holds now,
  // and the seccomp filter below (TSYNC) covers it too.
  dp.watch_threads();
  if (!seccomp) {
    spdlog::warn("seccomp filter off (security.seccomp false or --no-seccomp)");
    return "";
  }
  if (std::string error = install_seccomp_filter(); !error.empty()) return error;
  spdlog::info("seccomp filter on: {} system calls allowed, no_new_privs set",
               seccomp_allowed_syscalls().size() + 1);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xdpvhostd: vhost-user virtio-net backend with AF_XDP uplinks"};
  std::string config_path;
  std::string log_level;
  std::string log_format;
  bool follow_config = false;
  bool check_only = false;
  bool check_replies = false;
  bool no_seccomp = false;
  app.add_option("-c,--config", config_path, "JSON config file (schema: proto/config.schema.json)")
      ->required();
  app.add_option("--log-level", log_level, "override the config's log level");
  app.add_option("--log-format", log_format, "override the config's log format: text or json");
  app.add_flag(
      "--follow-config", follow_config,
      "apply a new version of --config as it lands (a ConfigMap's update), as SIGHUP does");
  app.add_flag("--check", check_only, "validate the config and exit");
  app.add_flag("--check-replies", check_replies,
               "validate every control reply against its proto/ schema (tests)");
  app.add_flag("--no-seccomp", no_seccomp,
               "do not install the seccomp filter (debugging; config security.seccomp)");
  app.set_version_flag("--version", std::string("xdpvhostd ") + XDPVHOST_VERSION);
  CLI11_PARSE(app, argc, argv);

  spdlog::set_default_logger(spdlog::stderr_color_mt("xdpvhostd"));
  std::optional<LogFormat> cli_format;
  if (!log_format.empty()) {
    cli_format = parse_log_format(log_format);
    if (!cli_format) {
      std::cerr << "xdpvhostd: --log-format: \"" << log_format << "\" is not text or json\n";
      return 2;
    }
  }
  install_log_format(cli_format.value_or(LogFormat::kText));

  std::optional<LogLevel> cli_level;
  if (!log_level.empty()) {
    cli_level = parse_log_level(log_level);
    if (!cli_level) {
      std::cerr << "xdpvhostd: --log-level: unknown level \"" << log_level << "\"\n";
      return 2;
    }
  }

  auto loaded = load_config_file(config_path);
  if (!loaded) {
    print_config_error(loaded.error());
    return 2;
  }
  if (check_only) {
    std::cout << "config OK\n";
    return 0;
  }
  Config config = std::move(loaded.value());
  spdlog::set_level(to_spdlog(cli_level.value_or(config.log.level)));
  install_log_format(cli_format.value_or(config.log.format));

  // Before anything else is opened or made.
  const std::string process = set_up_process();
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  ::signal(SIGPIPE, SIG_IGN);
  spdlog::info("{}", process);

  RunTimeState state;
  if (config.state_file) {
    auto read = load_state_file(*config.state_file);
    if (!read) {
      spdlog::warn("ignoring state file: {}", read.error().message);
    } else {
      for (const auto& why : read->skipped) spdlog::warn("state file: left out {}", why);
      state = std::move(read->state);
    }
  }
  const bool seccomp = config.security.seccomp && !no_seccomp;

  Daemon daemon(io, config, state);
  if (cli_level) daemon.set_log_level(*cli_level);
  if (std::string error = daemon.start(); !error.empty()) {
    spdlog::critical("{}", error);
    return 1;
  }
  RpcDispatcher dispatcher(SchemaRegistry::embedded());
  ControlApi api(daemon);
  api.register_methods(dispatcher);
  dispatcher.set_check_results(check_replies);
  Listeners listeners(io, daemon, dispatcher);
  if (std::string error; !listeners.start_control(daemon.config().control, error) ||
                         !listeners.start_metrics(daemon.config().metrics, error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  // --follow-config: a new version of the file is applied as SIGHUP
  // applies it, once it differs from the one in force (a ConfigMap's update
  // reaches the daemon with no restart).
  Config file_in_force = config;
  auto& source = daemon.config_source();
  source.path = config_path;
  source.following = follow_config;
  auto reload_config = [&](bool followed) {
    auto next = load_config_file(config_path);
    // A followed version that matches the one in force was touched, not
    // changed: nothing to apply or announce.
    if (followed && next && next.value() == file_in_force) {
      source.last_error.clear();
      return;
    }
    notify_service_manager("RELOADING=1");
    if (!next) {
      source.last_error = next.error().message;
      spdlog::error("reload: {}; nothing changed", next.error().message);
    } else {
      source.last_error.clear();
      spdlog::info("reload: {}{}", config_path, followed ? " (changed)" : "");
      daemon.reload(next.value());
      daemon.set_log_level(cli_level.value_or(next->log.level));
      install_log_format(cli_format.value_or(next->log.format));
      listeners.reload(next.value());
      file_in_force = std::move(next.value());
      ++source.reloads;
    }
    notify_service_manager("READY=1\nSTATUS=serving");
  };
  ConfigFollower follower(io, config_path, [&] { reload_config(true); });
  // The directory gone (a volume unmounted, a directory removed): said in
  // status.config and the log, watched again once it is back.
  follower.on_watch_changed([&](bool watching, const std::string& why) {
    source.following = watching;
    if (watching) {
      spdlog::info("following {} again", config_path);
      return;
    }
    source.last_error = why + "; changes are not followed until it is back";
    spdlog::error("--follow-config: {}", source.last_error);
  });
  if (follow_config) {
    if (std::string error = follower.start(); !error.empty()) {
      spdlog::critical("--follow-config: {}", error);
      return 1;
    }
    spdlog::info("following {}: changes are applied as they land", config_path);
  }
  if (std::string error = confine(daemon, daemon.config(), seccomp); !error.empty()) {
    spdlog::critical("cannot confine the daemon: {}", error);
    return 1;
  }
  HeapTrimmer heap_trimmer(io);
  heap_trimmer.start();
  notify_service_manager("READY=1\nSTATUS=serving");

  // SIGTERM, SIGINT: stop taking work (control and metrics listeners
  // first), then close every port: stopping a ring publishes its pending
  // used entries and signals the guest; the socket files are removed.
  // SIGHUP: read --config again and apply what changed.
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int signal) {
        if (ec) return;
        if (signal == SIGHUP) {
          reload_config(false);
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("signal {}: shutting down", signal);
        notify_service_manager("STOPPING=1");
        follower.stop();
        heap_trimmer.stop();
        listeners.stop();
        daemon.shutdown();
        io.stop();
      };
  signals.async_wait(on_signal);
  io.run();
  spdlog::info("xdpvhostd stopped");
  return 0;
}

// xdpvhostd: serves virtio-net devices to guests over vhost-user and
// switches their frames, locally and through AF_XDP uplinks.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <filesystem>
#include <iostream>

#include "config/config.hpp"
#include "control/control_api.hpp"
#include "control/control_server.hpp"
#include "runtime/daemon.hpp"
#include "runtime/log_level.hpp"
#include "metrics_service.hpp"
#include "control/rpc_dispatcher.hpp"

int main(int argc, char** argv) {
  CLI::App app{"xdpvhostd: vhost-user virtio-net backend with AF_XDP uplinks"};
  std::string config_path;
  std::string log_level;
  bool check_only = false;
  bool check_replies = false;
  app.add_option("-c,--config", config_path, "JSON config file (schema: proto/config.schema.json)")
      ->required();
  app.add_option("--log-level", log_level, "override the config's log level");
  app.add_flag("--check", check_only, "validate the config and exit");
  app.add_flag("--check-replies", check_replies,
               "validate every control reply against its proto/ schema (tests)");
  app.set_version_flag("--version", std::string("xdpvhostd ") + XDPVHOST_VERSION);
  CLI11_PARSE(app, argc, argv);

  spdlog::set_default_logger(spdlog::stderr_color_mt("xdpvhostd"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  auto loaded = xdpvhost::daemon::load_config_file(config_path);
  if (!loaded) {
    std::cerr << "xdpvhostd: " << loaded.error().message << "\n";
    for (std::size_t i = 1; i < loaded.error().details.size(); ++i)
      std::cerr << "  " << loaded.error().details[i] << "\n";
    return 2;
  }
  xdpvhost::daemon::Config config = std::move(loaded.value());
  // Run-time changes persisted by a previous run take precedence.
  if (config.state_file && std::filesystem::exists(*config.state_file)) {
    auto state = xdpvhost::daemon::load_config_file(*config.state_file);
    if (state) {
      config = std::move(state.value());
      spdlog::info("restored state from {}", *config.state_file);
    } else {
      spdlog::warn("ignoring state file: {}", state.error().message);
    }
  }
  if (check_only) {
    std::cout << "config OK\n";
    return 0;
  }
  auto level = config.log.level;
  if (!log_level.empty()) {
    auto parsed = xdpvhost::daemon::parse_log_level(log_level);
    if (!parsed) {
      std::cerr << "xdpvhostd: --log-level: unknown level \"" << log_level << "\"\n";
      return 2;
    }
    level = *parsed;
  }
  spdlog::set_level(xdpvhost::daemon::to_spdlog(level));

  boost::asio::io_context io;
  xdpvhost::daemon::Daemon daemon(io, std::move(config));
  if (std::string error = daemon.start(); !error.empty()) {
    spdlog::critical("{}", error);
    return 1;
  }
  xdpvhost::daemon::RpcDispatcher dispatcher(xdpvhost::daemon::SchemaRegistry::embedded());
  xdpvhost::daemon::ControlApi api(daemon);
  api.register_methods(dispatcher);
  dispatcher.set_check_results(check_replies);
  const auto& control = daemon.config().control;
  xdpvhost::daemon::ControlServer::Options control_options;
  control_options.path = control.socket;
  control_options.mode = control.mode;
  control_options.group = control.group;
  const std::size_t limit = control_options.max_request_bytes;
  xdpvhost::daemon::ControlServer server(
      io, control_options, [&](std::string_view line) { return dispatcher.handle(line); },
      [&] { return dispatcher.too_large(limit); });
  if (std::string error; !server.start(error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  spdlog::info("control socket {}", control.socket);

  xdpvhost::daemon::metrics::MetricsService metrics(io, daemon);
  if (std::string error; !metrics.start(daemon.config().metrics.listen, error)) {
    spdlog::critical("{}", error);
    return 1;
  }

  // Stop taking work (control and metrics listeners first), then close every
  // port: stopping a ring publishes its pending used entries and signals the
  // guest; the vhost-user socket files are removed.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int signal) {
    spdlog::info("signal {}: shutting down", signal);
    server.stop();
    metrics.stop();
    daemon.shutdown();
    io.stop();
  });
  ::signal(SIGPIPE, SIG_IGN);
  io.run();
  spdlog::info("xdpvhostd stopped");
  return 0;
}

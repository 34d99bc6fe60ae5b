// xdpvhostctl: the command line client of xdpvhostd's control socket.

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "commands.hpp"
#include "exit_code.hpp"

using namespace xdpvhost::ctl;

namespace {

constexpr const char* kVersion =
#ifdef XDPVHOST_VERSION
    XDPVHOST_VERSION;
#else
    "0.0.0";
#endif

void scope_options(CLI::App* cmd, Scope& scope, const char* what) {
  auto* port = cmd->add_option("--port", scope.port, std::string("only this port's ") + what);
  auto* uplink =
      cmd->add_option("--uplink", scope.uplink, std::string("only this uplink's ") + what);
  port->excludes(uplink);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xdpvhostctl: control xdpvhostd over its control socket (JSON-RPC 2.0)"};
  app.footer(std::string("\n") + kExitCodeHelp +
             "\nEnvironment:\n  XDPVHOST_SOCKET  control socket (default of --socket)\n");
  app.require_subcommand(1);
  app.fallthrough();
  // What packagers and probes expect; `version` also asks the daemon.
  app.set_version_flag("--version", std::string("xdpvhostctl ") + kVersion);

  GlobalOptions global;
  app.add_option("-s,--socket", global.socket, "control socket of xdpvhostd")
      ->envname("XDPVHOST_SOCKET")
      ->capture_default_str();
  app.add_option("--timeout", global.timeout_s, "seconds to wait for each reply")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("-j,--json", global.json, "print results as JSON (for scripts)");

  int code = kExitOk;
  auto run = [&](auto fn) { return [&, fn] { code = fn(Commands(global)); }; };

  app.add_subcommand("health", "readiness: exit 0 healthy, 4 not (the problems printed)")
      ->callback(run([](Commands c) { return c.health(); }));
  app.add_subcommand("status", "uptime, service threads, ports, uplinks")
      ->callback(run([](Commands c) { return c.status(); }));

  // ---- port ----
  auto* port = app.add_subcommand("port", "guest ports (vhost-user)")->require_subcommand(1);
  port->add_subcommand("list", "every port with its state")->callback(run([](Commands c) {
    return c.port_list();
  }));
  std::string port_name;
  auto* port_get = port->add_subcommand("get", "one port: virtqueues, features, tunables");
  port_get->add_option("NAME", port_name, "port name")->required();
  port_get->callback(run([&](Commands c) { return c.port_get(port_name); }));
  PortAddOptions add;
  auto* port_add = port->add_subcommand("add", "add a port (kept across daemon restarts)");
  port_add->add_option("NAME", add.name, "port name")->required();
  port_add->add_option("--socket", add.socket, "vhost-user socket path")->required();
  port_add->add_option("--mac", add.mac, "the guest's unicast MAC (none: learned)");
  port_add
      ->add_option("--mac-policy", add.mac_policy,
                   "fixed (default with --mac), learn (default without), learn-move")
      ->check(CLI::IsMember({"fixed", "learn", "learn-move"}));
  port_add->add_option("--mode", add.mode, "server (default: the daemon listens) or client")
      ->check(CLI::IsMember({"server", "client"}));
  port_add->add_option("--uplink", add.uplink, "uplink for unknown unicast and floods");
  port_add->add_option("--queues", add.queues, "queue pairs offered (1-128)");
  port_add->add_option("--mtu", add.mtu, "MTU offered to the guest");
  port_add->add_option("--thread", add.thread, "service thread index");
  port_add->callback(run([&](Commands c) { return c.port_add(add); }));
  auto* port_rm = port->add_subcommand("rm", "remove a port")->alias("remove");
  port_rm->add_option("NAME", port_name, "port name")->required();
  port_rm->callback(run([&](Commands c) { return c.port_remove(port_name); }));

  // ---- uplink ----
  auto* uplink =
      app.add_subcommand("uplink", "uplinks (AF_XDP on NIC queues)")->require_subcommand(1);
  uplink->add_subcommand("list", "every uplink with its queues")->callback(run([](Commands c) {
    return c.uplink_list();
  }));
  UplinkAddOptions up;
  auto* uplink_add = uplink->add_subcommand("add", "add an uplink");
  uplink_add->add_option("NAME", up.name, "uplink name")->required();
  uplink_add->add_option("--interface", up.interface, "network interface")->required();
  uplink_add
      ->add_option("--queue", up.queues,
                   "NIC queue id (repeat for more; default: every RX queue the NIC has, following "
                   "ethtool -L)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  uplink_add->add_option("--bind", up.bind, "AF_XDP bind mode")
      ->check(CLI::IsMember({"auto", "zerocopy", "copy"}));
  uplink_add->add_option("--thread", up.thread, "service thread index");
  uplink_add->callback(run([&](Commands c) { return c.uplink_add(up); }));
  std::string uplink_name;
  auto* uplink_rm = uplink->add_subcommand("rm", "remove an uplink")->alias("remove");
  uplink_rm->add_option("NAME", uplink_name, "uplink name")->required();
  uplink_rm->callback(run([&](Commands c) { return c.uplink_remove(uplink_name); }));

  // ---- tunable ----
  auto* tunable = app.add_subcommand("tunable", "busy_poll_us, signal_batch, rx_burst, ...")
                      ->alias("tunables")
                      ->require_subcommand(1);
  Scope tunable_scope;
  auto* tunable_get = tunable->add_subcommand("get", "effective tunables (global, port or uplink)");
  scope_options(tunable_get, tunable_scope, "tunables");
  tunable_get->callback(run([&](Commands c) { return c.tunable_get(tunable_scope); }));
  std::string key, value;
  auto* tunable_set = tunable->add_subcommand("set", "change a tunable on the running daemon");
  tunable_set->add_option("KEY", key, "tunable name, e.g. busy_poll_us")->required();
  tunable_set->add_option("VALUE", value, "new value, e.g. 0, 32, true")->required();
  scope_options(tunable_set, tunable_scope, "override");
  tunable_set->callback(run([&](Commands c) { return c.tunable_set(key, value, tunable_scope); }));

  // ---- stats ----
  auto* stats = app.add_subcommand("stats", "counters of ports, uplinks and service threads")
                    ->require_subcommand(0, 1);
  Scope stats_scope;
  scope_options(stats, stats_scope, "counters");
  WatchOptions watch;
  std::string watch_seconds;
  stats
      ->add_option("--watch", watch_seconds,
                   "print again every SECONDS (default 1) with per-second rates, until Ctrl-C")
      ->expected(0, 1)
      ->option_text("[SECONDS]");
  stats->add_option("--count", watch.count, "with --watch: stop after this many samples");
  Scope reset_scope;
  auto* stats_reset =
      stats->add_subcommand("reset", "zero stats.get's counters (metrics keep counting)");
  scope_options(stats_reset, reset_scope, "counters");
  stats_reset->callback(run([&](Commands c) { return c.stats_reset(reset_scope); }));
  stats->callback([&] {
    if (stats_reset->parsed()) return;
    watch.enabled = stats->count("--watch") > 0;
    if (!watch_seconds.empty()) {
      char* end = nullptr;
      watch.interval_s = std::strtod(watch_seconds.c_str(), &end);
      if (end == watch_seconds.c_str() || *end != '\0' || !(watch.interval_s > 0))
        throw CLI::ValidationError("--watch", "SECONDS must be a positive number");
    }
    code = Commands(global).stats(stats_scope, watch);
  });

  // ---- queue ----
  auto* queue = app.add_subcommand("queue", "queues and the service threads that run them")
                    ->require_subcommand(1);
  QueueMoveOptions qm;
  auto* queue_move = queue->add_subcommand(
      "move", "run a port's queue pair (its queue group) or an uplink's queue on another thread");
  auto* qm_port = queue_move->add_option("--port", qm.port, "the guest port");
  auto* qm_uplink = queue_move->add_option("--uplink", qm.uplink, "the uplink");
  qm_port->excludes(qm_uplink);
  queue_move->add_option("--pair", qm.pair, "with --port: a queue pair of it (default 0)");
  queue_move->add_option("--queue", qm.queue, "with --uplink: its NIC queue (default 0)");
  queue_move->add_option("--thread", qm.thread, "the service thread")->required();
  queue_move->callback([&] {
    if (!qm.port && !qm.uplink) throw CLI::ValidationError("--port or --uplink is required");
    code = Commands(global).queue_move(qm);
  });

  // ---- log ----
  auto* log = app.add_subcommand("log", "logging")->require_subcommand(1);
  std::string level;
  auto* log_level = log->add_subcommand("level", "set the daemon's log level");
  log_level->add_option("LEVEL", level, "trace, debug, info, warn, error or off")
      ->required()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  log_level->callback(run([&](Commands c) { return c.log_level(level); }));

  app.add_subcommand("version", "client and daemon versions")->callback(run([](Commands c) {
    return c.version(kVersion);
  }));

  std::string method, params;
  auto* call = app.add_subcommand("call", "any control method; prints its result as JSON");
  call->add_option("METHOD", method, "e.g. config.get")->required();
  call->add_option("JSON-PARAMS", params, "params object, e.g. '{\"name\":\"vm1\"}'");
  call->callback(run([&](Commands c) { return c.call(method, params); }));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int cli = app.exit(e);
    return cli == 0 ? kExitOk : kExitUsage;
  }
  return code;
}

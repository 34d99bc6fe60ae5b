#include "commands.hpp"

#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "exit_code.hpp"
#include "human_views.hpp"
#include "proto/rpc_error_code.hpp"
#include "stats_view.hpp"

namespace xdpvhost::ctl {

using nlohmann::json;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int) {
  g_interrupted = 1;
}

// Sleeps up to `seconds`; false if interrupted (SIGINT/SIGTERM).
bool pause_for(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_interrupted) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    ::poll(nullptr, 0, static_cast<int>(left.count()));
  }
  return false;
}

std::string code_name(const json& code) {
  if (!code.is_number_integer()) return "unknown";
  const int c = code.get<int>();
  return sys::name_of(daemon::kRpcErrorCodes, static_cast<daemon::RpcErrorCode>(c));
}

}  // namespace

json Scope::params() const {
  if (port) return json{{"port", *port}};
  if (uplink) return json{{"uplink", *uplink}};
  return json::object();
}

json parse_value(const std::string& text) {
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || v.is_object() || v.is_array()) return text;
  return v;
}

Commands::Commands(const GlobalOptions& options)
    : options_(options),
      client_(options.socket,
              std::chrono::milliseconds(static_cast<long>(options.timeout_s * 1000.0))) {}

int Commands::fail(const CallOutcome& outcome) {
  if (outcome.kind == CallOutcome::Kind::kTransportError) {
    std::cerr << "xdpvhostctl: " << outcome.problem << '\n';
    return kExitUnreachable;
  }
  const json& e = outcome.error;
  const json code = e.value("code", json());
  std::cerr << "xdpvhostctl: error " << (code.is_null() ? std::string("?") : code.dump()) << " ("
            << code_name(code) << "): "
            << (e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                  : std::string("(no message)"))
            << '\n';
  if (e.contains("data") && e["data"].is_object() && e["data"].contains("errors") &&
      e["data"]["errors"].is_array() && e["data"]["errors"].size() > 1)
    for (const auto& line : e["data"]["errors"])
      std::cerr << "  " << (line.is_string() ? line.get<std::string>() : line.dump()) << '\n';
  if (options_.json) std::cout << json{{"error", e}}.dump(2) << '\n';
  return kExitRpcError;
}

template <class Human>
int Commands::finish(const CallOutcome& outcome, Human&& human) {
  if (!outcome.ok()) return fail(outcome);
  if (options_.json)
    std::cout << outcome.result.dump(2) << '\n';
  else
    human(outcome.result);
  return kExitOk;
}

int Commands::health() {
  const CallOutcome outcome = client_.call("health");
  const int code = finish(outcome, [](const json& r) {
    if (r.value("healthy", false)) std::cout << "healthy\n";
    for (const auto& p : r.value("problems", json::array()))
      std::cout << (p.is_string() ? p.get<std::string>() : p.dump()) << '\n';
  });
  if (code != kExitOk) return code;
  return outcome.result.value("healthy", false) ? kExitOk : kExitUnhealthy;
}

int Commands::status() {
  return finish(client_.call("status"), [](const json& r) { print_status(r, std::cout); });
}

int Commands::port_list() {
  return finish(client_.call("port.list"), [](const json& r) { print_port_list(r, std::cout); });
}

int Commands::port_get(const std::string& name) {
  return finish(client_.call("port.get", json{{"name", name}}),
                [](const json& r) { print_port_detail(r, std::cout); });
}

int Commands::port_add(const PortAddOptions& o) {
  json params{{"name", o.name}, {"socket", o.socket}};
  if (o.mac) params["mac"] = *o.mac;
  if (o.mac_policy) params["mac_policy"] = *o.mac_policy;
  if (o.mode) params["mode"] = *o.mode;
  if (o.uplink) params["uplink"] = *o.uplink;
  if (o.queues) params["queues"] = *o.queues;
  if (o.mtu) params["mtu"] = *o.mtu;
  if (o.thread) params["thread"] = *o.thread;
  return finish(client_.call("port.add", params), [](const json& r) {
    std::cout << "added port " << cell(r, "name") << " (" << cell(r, "state") << ")\n";
  });
}

int Commands::port_remove(const std::string& name) {
  return finish(client_.call("port.remove", json{{"name", name}}),
                [](const json& r) { std::cout << "removed port " << cell(r, "removed") << '\n'; });
}

int Commands::queue_move(const QueueMoveOptions& o) {
  json params{{"thread", o.thread}};
  if (o.port) {
    params["port"] = *o.port;
    params["pair"] = o.pair;
  } else {
    params["uplink"] = o.uplink.value_or("");
    params["queue"] = o.queue;
  }
  return finish(client_.call("queue.move", params), [&](const json& r) {
    const std::string what =
        o.port ? "port " + *o.port + " pairs " + cell(r, "pairs")
               : "uplink " + o.uplink.value_or("") + " queue " + std::to_string(o.queue);
    if (cell(r, "outcome") == "already_there")
      std::cout << what << " already runs on service thread " << cell(r, "thread") << '\n';
    else
      std::cout << what << " moved from service thread " << cell(r, "from") << " to "
                << cell(r, "thread") << " in " << cell(r, "took_us") << " us\n";
  });
}

int Commands::uplink_list() {
  return finish(client_.call("uplink.list"),
                [](const json& r) { print_uplink_list(r, std::cout); });
}

int Commands::uplink_add(const UplinkAddOptions& o) {
  json params{{"name", o.name}, {"interface", o.interface}};
  if (!o.queues.empty()) params["queues"] = o.queues;
  if (o.bind) params["bind"] = *o.bind;
  if (o.thread) params["thread"] = *o.thread;
  return finish(client_.call("uplink.add", params),
                [](const json& r) { print_uplink_list(json::array({r}), std::cout); });
}

int Commands::uplink_remove(const std::string& name) {
  return finish(client_.call("uplink.remove", json{{"name", name}}), [](const json& r) {
    std::cout << "removed uplink " << cell(r, "removed") << '\n';
  });
}

int Commands::tunable_get(const Scope& scope) {
  return finish(client_.call("tunables.get", scope.params()),
                [](const json& r) { print_tunables(r, std::cout); });
}

int Commands::tunable_set(const std::string& key, const std::string& value, const Scope& scope) {
  json params = scope.params();
  params[key] = parse_value(value);
  return finish(client_.call("tunables.set", params),
                [](const json& r) { print_tunables(r, std::cout); });
}

int Commands::stats(const Scope& scope, const WatchOptions& watch) {
  if (!watch.enabled)
    return finish(client_.call("stats.get", scope.params()),
                  [](const json& r) { print_stats(r, nullptr, 0, std::cout); });
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const bool clear = !options_.json && ::isatty(STDOUT_FILENO);
  json previous;
  auto previous_at = std::chrono::steady_clock::now();
  for (unsigned n = 0; watch.count == 0 || n < watch.count; ++n) {
    if (n > 0 && !pause_for(watch.interval_s)) break;
    CallOutcome outcome = client_.call("stats.get", scope.params());
    if (!outcome.ok()) return fail(outcome);
    const auto now = std::chrono::steady_clock::now();
    if (options_.json) {
      std::cout << outcome.result.dump() << std::endl;
    } else {
      if (clear) std::cout << "\033[H\033[2J";
      const double seconds = std::chrono::duration<double>(now - previous_at).count();
      print_stats(outcome.result, previous, seconds, std::cout);
      std::cout << std::endl;
    }
    previous = std::move(outcome.result);
    previous_at = now;
  }
  return kExitOk;
}

int Commands::stats_reset(const Scope& scope) {
  return finish(client_.call("stats.reset", scope.params()),
                [](const json& r) { print_stats_reset(r, std::cout); });
}

int Commands::log_level(const std::string& level) {
  return finish(client_.call("log.set_level", json{{"level", level}}), [](const json& r) {
    std::cout << "log level " << cell(r, "level") << " (was " << cell(r, "previous") << ")\n";
  });
}

int Commands::version(const std::string& client_version) {
  CallOutcome outcome = client_.call("version");
  if (!outcome.ok()) {
    if (!options_.json) std::cout << "xdpvhostctl " << client_version << '\n';
    return fail(outcome);
  }
  if (options_.json) {
    std::cout << json{{"client", client_version}, {"daemon", outcome.result}}.dump(2) << '\n';
    return kExitOk;
  }
  print_version(client_version, outcome.result, std::cout);
  return kExitOk;
}

int Commands::call(const std::string& method, const std::string& params_text) {
  json params;
  if (!params_text.empty()) {
    params = json::parse(params_text, nullptr, /*allow_exceptions=*/false);
    if (params.is_discarded()) {
      std::cerr << "xdpvhostctl: JSON-PARAMS is not valid JSON: " << params_text << '\n';
      return kExitUsage;
    }
  }
  CallOutcome outcome = client_.call(method, params);
  if (!outcome.ok()) return fail(outcome);
  std::cout << outcome.result.dump(2) << '\n';
  return kExitOk;
}

}  // namespace xdpvhost::ctl

#pragma once
// What each xdpvhostctl command does: one control method (or a few), its
// output in human or --json form, and the exit code (exit_code.hpp).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rpc_client.hpp"

namespace xdpvhost::ctl {

struct GlobalOptions {
  std::string socket = "/run/xdpvhost/control.sock";
  double timeout_s = 10.0;
  bool json = false;
};

struct PortAddOptions {
  std::string name, socket;
  std::optional<std::string> mac, mac_policy, mode, uplink;
  std::optional<unsigned> queues, mtu, thread;
};

struct UplinkAddOptions {
  std::string name, interface;
  std::vector<unsigned> queues;
  std::optional<std::string> bind;
  std::optional<unsigned> thread;
};

// A port or uplink scope for tunables and stats ({} for none or global).
struct Scope {
  std::optional<std::string> port, uplink;
  nlohmann::json params() const;
};

// queue move: a port's queue pair (its queue group) or an uplink's NIC
// queue, and the service thread to run it.
struct QueueMoveOptions {
  std::optional<std::string> port, uplink;
  unsigned pair = 0, queue = 0, thread = 0;
};

struct WatchOptions {
  bool enabled = false;
  double interval_s = 1.0;
  unsigned count = 0;  // 0: until interrupted
};

class Commands {
 public:
  explicit Commands(const GlobalOptions& options);

  int health();
  int status();
  int port_list();
  int port_get(const std::string& name);
  int port_add(const PortAddOptions& o);
  int port_remove(const std::string& name);
  int uplink_list();
  int uplink_add(const UplinkAddOptions& o);
  int uplink_remove(const std::string& name);
  int tunable_get(const Scope& scope);
  int tunable_set(const std::string& key, const std::string& value, const Scope& scope);
  int stats(const Scope& scope, const WatchOptions& watch);
  int stats_reset(const Scope& scope);
  int log_level(const std::string& level);
  int queue_move(const QueueMoveOptions& o);
  int version(const std::string& client_version);
  int call(const std::string& method, const std::string& params_text);

 private:
  // Prints the outcome (result in the chosen form, or the error) and returns
  // the exit code.
  template <class Human>
  int finish(const CallOutcome& outcome, Human&& human);
  int fail(const CallOutcome& outcome);

  GlobalOptions options_;
  RpcClient client_;
};

// A tunable value from the command line: a JSON literal (42, true) or else
// the text as a string (the daemon names what is wrong with it).
nlohmann::json parse_value(const std::string& text);

}  // namespace xdpvhost::ctl

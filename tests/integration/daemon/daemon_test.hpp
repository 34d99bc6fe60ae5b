#pragma once
// The fixture every daemon integration test uses: a private temporary
// directory (/tmp/xdpvhost-integ-XXXXXX) for the config, the log and the
// sockets; the real xdpvhostd started with the ports a test names; a control
// client; test frontends connected and negotiated against its sockets; and at
// the end a SIGTERM that must make the daemon exit with status 0 in time.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/frame_builder.hpp"
#include "frontend/frontend.hpp"
#include "support/control_client.hpp"
#include "support/daemon_process.hpp"

namespace xdpvhost::integration {

using test_support::ControlClient;
using test_support::DaemonProcess;
using test_support::RpcFailure;
using test_support::RpcReply;

namespace fe = xdpvhost::testing;
using namespace std::chrono_literals;

// Polls `done` until it is true or `timeout` passes; returns its last value.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s);

// "exit status 0", "killed by signal 7 (Bus error)", "still running".
std::string describe_status(std::optional<int> status);

// "02:00:00:00:hi:lo" for make_mac(id).
std::string mac_string(std::uint16_t id);

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // One entry of the config's "ports": name, socket in the test directory,
  // MAC make_mac(mac_id); `extra` is merged in (mode, queues, tunables, ...).
  nlohmann::json port(const std::string& name, std::uint16_t mac_id,
                      const nlohmann::json& extra = nlohmann::json::object()) const;
  std::string socket_path(const std::string& name) const;

  // Starts xdpvhostd with these ports; `tunables` and `extra` (top-level keys)
  // are merged into the config. Throws (ending the test) if it does not come up.
  void start_daemon(const std::vector<nlohmann::json>& ports,
                    const nlohmann::json& tunables = nlohmann::json::object(),
                    const nlohmann::json& extra = nlohmann::json::object());

  DaemonProcess& daemon() { return *daemon_; }
  ControlClient& rpc() { return *rpc_; }

  nlohmann::json port_get(const std::string& name) {
    return rpc().call("port.get", {{"name", name}});
  }
  std::string port_state(const std::string& name) { return port_get(name).at("state"); }
  // The queue entry of port.get for `vring`, or null.
  nlohmann::json queue_of(const std::string& name, std::uint32_t vring);
  // stats.get for one port.
  nlohmann::json stats(const std::string& name);
  std::uint64_t counter(const std::string& name, const std::string& key) {
    return stats(name).at(key).get<std::uint64_t>();
  }
  std::uint64_t drops(const std::string& name, const std::string& reason) {
    return stats(name).at("drops").value(reason, std::uint64_t{0});
  }

  // A test frontend on the port's socket, connected and negotiated (nullptr
  // and a test failure if that did not work).
  std::unique_ptr<fe::Frontend> connect_guest(const std::string& name,
                                              const fe::NegotiateOptions& options = {},
                                              const fe::ArenaOptions& memory = {});
  // connect_guest() and then post_rx() with its defaults: a full ring of
  // 2048-byte receive buffers on every queue pair. Throws (ending the test,
  // like start_daemon) if the guest does not come up or no buffer fits.
  std::unique_ptr<fe::Frontend> connect_receiving_guest(const std::string& name,
                                                        const fe::NegotiateOptions& options = {},
                                                        const fe::ArenaOptions& memory = {});
  // Connected but not negotiated.
  std::unique_ptr<fe::Frontend> open_guest(const std::string& name,
                                           const fe::ArenaOptions& memory = {});

  std::string dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<ControlClient> rpc_;
};

}  // namespace xdpvhost::integration

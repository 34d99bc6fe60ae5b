#include "daemon_test.hpp"

#include <stdlib.h>
#include <string.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "guest_traffic.hpp"

namespace xdpvhost::integration {

using nlohmann::json;

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(2ms);
  }
}

std::string mac_string(std::uint16_t id) {
  const fe::MacAddress m = fe::make_mac(id);
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

std::string describe_status(std::optional<int> status) {
  if (!status) return "still running";
  if (*status > 128)
    return "killed by signal " + std::to_string(*status - 128) + " (" + ::strsignal(*status - 128) +
           ")";
  return "exit status " + std::to_string(*status);
}

void DaemonTest::SetUp() {
  char tmpl[] = "/tmp/xdpvhost-integ-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
}

void DaemonTest::TearDown() {
  rpc_.reset();
  if (daemon_) {
    if (!daemon_->terminate_requested() && !daemon_->running()) {
      ADD_FAILURE() << "xdpvhostd died during the test: "
                    << describe_status(daemon_->exit_status());
    } else {
      const auto status = daemon_->terminate(10s);
      EXPECT_EQ(status, std::optional<int>(0))
          << "xdpvhostd did not exit with status 0 within 10 s of SIGTERM: "
          << describe_status(status);
    }
    if (HasFailure()) {
      std::string log = daemon_->log();
      if (log.size() > 20000) log = "...\n" + log.substr(log.size() - 20000);
      std::fprintf(stderr, "---- xdpvhostd log (%s) ----\n%s---- end of log ----\n", dir_.c_str(),
                   log.c_str());
    }
    daemon_.reset();
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string DaemonTest::socket_path(const std::string& name) const {
  return dir_ + "/" + name + ".sock";
}

json DaemonTest::port(const std::string& name, std::uint16_t mac_id, const json& extra) const {
  json p{{"name", name}, {"socket", socket_path(name)}, {"mac", mac_string(mac_id)}};
  for (const auto& [k, v] : extra.items()) p[k] = v;
  return p;
}

void DaemonTest::start_daemon(const std::vector<json>& ports, const json& tunables,
                              const json& extra) {
  json config{{"ports", ports},
              {"control", {{"socket", dir_ + "/control.sock"}}},
              {"log", {{"level", "debug"}}}};
  json t = json::object();
  for (const auto& [k, v] : tunables.items()) t[k] = v;
  if (!t.empty()) config["tunables"] = t;
  for (const auto& [k, v] : extra.items()) config[k] = v;
  daemon_ = std::make_unique<DaemonProcess>(dir_, config);
  rpc_ = std::make_unique<ControlClient>(daemon_->control_socket());
  std::string error;
  // An exception ends the test body at once (a failed ASSERT in a helper
  // would only leave the helper).
  if (!daemon_->start(error)) {
    daemon_.reset();
    throw std::runtime_error("xdpvhostd did not start: " + error);
  }
}

json DaemonTest::queue_of(const std::string& name, std::uint32_t vring) {
  const json detail = port_get(name);
  for (const auto& q : detail.at("queues"))
    if (q.at("index").get<std::uint32_t>() == vring) return q;
  return nullptr;
}

json DaemonTest::stats(const std::string& name) {
  return rpc().call("stats.get", {{"port", name}}).at("ports").at(name);
}

std::unique_ptr<fe::Frontend> DaemonTest::open_guest(const std::string& name,
                                                     const fe::ArenaOptions& memory) {
  fe::FrontendOptions o;
  o.socket_path = socket_path(name);
  o.memory = memory;
  auto g = std::make_unique<fe::Frontend>(o);
  if (!g->connect()) {
    ADD_FAILURE() << "connect to " << o.socket_path << ": " << g->last_error();
    return nullptr;
  }
  return g;
}

std::unique_ptr<fe::Frontend> DaemonTest::connect_guest(const std::string& name,
                                                        const fe::NegotiateOptions& options,
                                                        const fe::ArenaOptions& memory) {
  auto g = open_guest(name, memory);
  if (!g) return nullptr;
  if (!g->negotiate(options)) {
    ADD_FAILURE() << "negotiate on " << name << ": " << g->last_error();
    return nullptr;
  }
  return g;
}

std::unique_ptr<fe::Frontend> DaemonTest::connect_receiving_guest(
    const std::string& name, const fe::NegotiateOptions& options, const fe::ArenaOptions& memory) {
  auto g = connect_guest(name, options, memory);
  if (!g) throw std::runtime_error("no negotiated guest on port " + name);
  if (post_rx(*g) == 0)
    throw std::runtime_error("no receive buffer could be posted on port " + name + ": " +
                             g->net().last_error());
  return g;
}

}  // namespace xdpvhost::integration

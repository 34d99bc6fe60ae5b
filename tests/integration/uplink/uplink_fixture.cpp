#include "uplink_fixture.hpp"

#include <unistd.h>

#include <thread>

#include "peer_sockets.hpp"
#include "support/shell_command.hpp"

namespace xdpvhost::uplink_test {

using test_support::run_shell;

void UplinkTest::SetUp() {
  workdir_ = "/tmp/xdpvhost-uplink-" + std::to_string(::getpid());
  run_shell("rm -rf " + workdir_);
  ASSERT_EQ(run_shell("mkdir -p " + workdir_), 0);
  std::string error;
  ASSERT_TRUE(lab_.create_namespaces(error)) << error;
  ASSERT_TRUE(lab_.create_veth(error)) << error;
}

void UplinkTest::TearDown() {
  rpc_.reset();
  if (daemon_ && daemon_->running()) {
    const auto code = daemon_->terminate();
    EXPECT_EQ(code, std::optional<int>(0)) << "xdpvhostd did not exit cleanly on SIGTERM:\n"
                                           << daemon_->log_tail();
    if (HasFailure())
      std::cerr << "---- xdpvhostd log tail ----\n" << daemon_->log_tail(60) << "\n";
    daemon_.reset();
  }
  if (!HasFailure())
    run_shell("rm -rf " + workdir_);
  else
    std::cerr << "logs kept in " << workdir_ << "\n";
}

json UplinkTest::port_config(const GuestAddress& guest, const char* mode) const {
  return json{{"name", guest.name},
              {"socket", socket_path(guest.name)},
              {"mac", guest.mac},
              {"mode", mode},
              {"uplink", "up0"}};
}

json UplinkTest::uplink_config(const json& tunables) const {
  json u{{"name", "up0"}, {"interface", UplinkLab::kNodeIf}, {"queues", json::array({0})}};
  if (!tunables.empty()) u["tunables"] = tunables;
  return u;
}

json UplinkTest::daemon_config(const json& uplinks, const json& ports, const json& extra) const {
  json c{{"uplinks", uplinks}, {"ports", ports}};
  for (auto it = extra.begin(); it != extra.end(); ++it) c[it.key()] = it.value();
  return c;
}

void UplinkTest::start_daemon(json config) {
  if (!config.contains("control")) config["control"] = json{{"socket", workdir_ + "/control.sock"}};
  if (!config.contains("log")) config["log"] = json{{"level", "info"}};
  if (!config.contains("metrics")) config["metrics"] = json{{"listen", ""}};
  rpc_.reset();
  daemon_ = std::make_unique<DaemonProcess>(workdir_, config, lab_.node_ns());
  std::string error;
  ASSERT_TRUE(daemon_->start(error, std::chrono::seconds(15))) << error;
  rpc_ = std::make_unique<ControlClient>(daemon_->control_socket());
}

void UplinkTest::stop_daemon() {
  ASSERT_TRUE(daemon_ && daemon_->running());
  const auto code = daemon_->terminate();
  ASSERT_EQ(code, std::optional<int>(0)) << "xdpvhostd did not exit cleanly on SIGTERM:\n"
                                         << daemon_->log_tail();
}

void UplinkTest::connect_guest(std::unique_ptr<FrontendGuest>& out, const GuestAddress& guest,
                               testing::Role role) {
  out = std::make_unique<FrontendGuest>(socket_path(guest.name), parse_mac_text(guest.mac),
                                        parse_ipv4_text(guest.ip), role);
  std::string error;
  ASSERT_TRUE(out->start(error)) << guest.name << ": " << error;
  ASSERT_TRUE(wait_for([&] { return port_state(guest.name) == "running"; }))
      << guest.name << " is " << port_state(guest.name);
}

void UplinkTest::start_with_guest(std::unique_ptr<FrontendGuest>& vm1, const json& uplink_tunables,
                                  const json& extra) {
  ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(json::array({uplink_config(uplink_tunables)}),
                                                     json::array({port_config(kVm1)}), extra)));
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1, kVm1));
}

void UplinkTest::start_testpmd(std::unique_ptr<TestpmdGuest>& out, const GuestAddress& guest,
                               const std::string& mode, std::vector<std::string> app_args) {
  TestpmdGuest::Options o;
  o.name = std::string(guest.name) + "-" + mode;
  o.socket = socket_path(guest.name);
  o.mac = guest.mac;
  o.mode = mode;
  o.workdir = workdir_;
  o.app_args = std::move(app_args);
  out = std::make_unique<TestpmdGuest>(o);
  std::string error;
  ASSERT_TRUE(out->start(error)) << error;
  ASSERT_TRUE(wait_for([&] { return port_state(guest.name) == "running"; }))
      << guest.name << " is " << port_state(guest.name);
}

RpcReply UplinkTest::request(const std::string& method, const json& params) {
  const auto failed = [](const std::string& why) {
    return RpcReply{nullptr, json{{"code", 0}, {"message", why}}};
  };
  if (!rpc_ || !daemon_->running()) return failed("the daemon is not running");
  try {
    return rpc_->request(method, params);
  } catch (const test_support::RpcFailure& e) {
    return failed(e.what());
  }
}

json UplinkTest::call(const std::string& method, const json& params) {
  const RpcReply r = request(method, params);
  EXPECT_TRUE(r.ok()) << method << " " << params.dump() << ": " << r.error_code() << " "
                      << r.error_message();
  return r.ok() ? r.result : json();
}

json UplinkTest::port_stats(const std::string& name) {
  return call("stats.get", {{"port", name}}).at("ports").at(name);
}

json UplinkTest::uplink_stats() {
  return call("stats.get", {{"uplink", "up0"}}).at("uplinks").at("up0");
}

json UplinkTest::uplink_status() {
  for (const json& u : call("uplink.list"))
    if (u.value("name", "") == "up0") return u;
  ADD_FAILURE() << "uplink.list has no up0";
  return json();
}

std::string UplinkTest::port_state(const std::string& name) {
  const RpcReply r = request("port.get", {{"name", name}});
  return r.ok() ? r.result.value("state", "?") : "(port.get failed: " + r.error_message() + ")";
}

bool UplinkTest::wait_for(const std::function<bool()>& condition,
                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::uint64_t UplinkTest::total(const json& drops) {
  std::uint64_t sum = 0;
  for (const auto& [name, value] : drops.items()) sum += value.get<std::uint64_t>();
  return sum;
}

void UplinkTest::peer_neighbour(const GuestAddress& guest) {
  std::string out;
  ASSERT_EQ(lab_.in_peer(std::string("ip neigh replace ") + guest.ip + " lladdr " + guest.mac +
                             " dev " + UplinkLab::kPeerIf + " nud permanent",
                         &out),
            0)
      << out;
}

}  // namespace xdpvhost::uplink_test

namespace xdpvhost::uplink_test {

void UplinkTest::check_udp_both_ways(FrontendGuest& vm, const GuestAddress& guest, int count) {
  using namespace std::chrono_literals;
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(guest));
  const MacAddress peer_mac = parse_mac_text(UplinkLab::kPeerMac);
  const Ipv4Address peer_ip = parse_ipv4_text(UplinkLab::kPeerIp);
  std::unique_ptr<UdpSocket> sink, sender;
  {
    NetnsScope in(lab_.peer_fd());
    ASSERT_TRUE(in.ok());
    sink = std::make_unique<UdpSocket>(7101, 8 << 20);
    sender = std::make_unique<UdpSocket>(7102);
  }
  ASSERT_TRUE(sink->valid() && sender->valid());
  const json p0 = port_stats(guest.name);
  static std::uint32_t round = 0;
  ++round;
  for (int i = 0; i < count; ++i)
    ASSERT_TRUE(vm.send(
        vm.udp_to(peer_mac, peer_ip, 7100, 7101,
                  testing::payload_pattern(64 + i, round * 1000 + static_cast<std::uint32_t>(i)))));
  for (int i = 0; i < count; ++i) {
    auto d = sink->receive(3000);
    ASSERT_TRUE(d.has_value()) << "guest -> peer: " << i << " of " << count << " datagrams arrived";
    EXPECT_EQ(d->payload,
              testing::payload_pattern(64 + i, round * 1000 + static_cast<std::uint32_t>(i)));
  }
  auto is_ours = [&](const PacketView& v) {
    return v.udp && v.dst_port == 7100 && v.src_port == 7102;
  };
  const std::size_t before = vm.count(is_ours);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(sender->send_to(
        guest.ip, 7100,
        testing::payload_pattern(80, round * 1000 + 500 + static_cast<std::uint32_t>(i))));
    if (i % 32 == 31) vm.pump_until(is_ours, before + static_cast<std::size_t>(i + 1), 2s);
  }
  ASSERT_TRUE(vm.pump_until(is_ours, before + static_cast<std::size_t>(count)))
      << "peer -> guest: " << vm.count(is_ours) - before << " of " << count << " datagrams arrived";
  const json p1 = port_stats(guest.name);
  EXPECT_EQ(p1.at("rx_packets").get<std::uint64_t>() - p0.at("rx_packets").get<std::uint64_t>(),
            static_cast<std::uint64_t>(count));
  EXPECT_EQ(p1.at("tx_packets").get<std::uint64_t>() - p0.at("tx_packets").get<std::uint64_t>(),
            static_cast<std::uint64_t>(count));
}

bool UplinkTest::fdb_has(const char* mac) const {
  for (const std::string& m : lab_.node_fdb_self_permanent())
    if (m == mac) return true;
  return false;
}

}  // namespace xdpvhost::uplink_test

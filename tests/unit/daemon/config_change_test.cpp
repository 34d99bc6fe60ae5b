// Run-time changes: port.add / port.remove / uplink.add / uplink.remove /
// tunables.set on a Config, with the error kinds the control server maps to
// protocol codes, and the input left untouched when refused.

#include "config/config_change.hpp"

#include <gtest/gtest.h>

#include <string>

#include "vhost/device.hpp"

namespace xdpvhost::daemon {
namespace {

using nlohmann::json;

Config base_config() {
  auto r =
      parse_config({{"ports",
                     {{{"name", "vm1"},
                       {"socket", "/run/t/vm1.sock"},
                       {"mac", "52:54:00:00:00:01"},
                       {"uplink", "up0"}}}},
                    {"uplinks", {{{"name", "up0"}, {"interface", "eth1"}, {"queues", {0, 1}}}}},
                    {"threads", {{"count", 2}}},
                    {"control", {{"socket", "/run/t/control.sock"}}}});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return *r;
}

PortConfig new_port(const json& overrides = json::object()) {
  json j = {{"name", "vm2"}, {"socket", "/run/t/vm2.sock"}, {"mac", "52:54:00:00:00:02"}};
  j.update(overrides);
  auto r = parse_port(j);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return *r;
}

UplinkConfig new_uplink(const json& overrides = json::object()) {
  json j = {{"name", "up1"}, {"interface", "eth2"}};
  j.update(overrides);
  auto r = parse_uplink(j);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return *r;
}

void expect_refused(const ConfigResult<Config>& r, ConfigErrorKind kind,
                    const std::string& message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, kind);
  EXPECT_EQ(r.error().message, message);
}

TEST(ConfigChange, PortAdded) {
  const Config before = base_config();
  auto r = with_port_added(before, new_port({{"uplink", "up0"}, {"thread", 1}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->ports.size(), 2u);
  EXPECT_EQ(r->ports[1].name, "vm2");
  EXPECT_EQ(before.ports.size(), 1u);
  EXPECT_EQ(before, base_config());
}

TEST(ConfigChange, PortAddRefusals) {
  const Config before = base_config();
  expect_refused(with_port_added(before, new_port({{"name", "vm1"}})), ConfigErrorKind::kNameInUse,
                 "params.name: \"vm1\" is already the name of a port");
  expect_refused(with_port_added(before, new_port({{"name", "up0"}})), ConfigErrorKind::kNameInUse,
                 "params.name: \"up0\" is already the name of an uplink");
  expect_refused(with_port_added(before, new_port({{"mac", "52:54:00:00:00:01"}})),
                 ConfigErrorKind::kMacInUse,
                 "params.mac: 52:54:00:00:00:01 is already the MAC of port \"vm1\"");
  expect_refused(with_port_added(before, new_port({{"socket", "/run/t/vm1.sock"}})),
                 ConfigErrorKind::kSocketInUse,
                 "params.socket: \"/run/t/vm1.sock\" is already the socket of port \"vm1\"");
  expect_refused(with_port_added(before, new_port({{"socket", "/run/t/control.sock"}})),
                 ConfigErrorKind::kSocketInUse,
                 "params.socket: \"/run/t/control.sock\" is the control socket");
  expect_refused(with_port_added(before, new_port({{"uplink", "up9"}})), ConfigErrorKind::kNotFound,
                 "params.uplink: there is no uplink \"up9\"");
  expect_refused(with_port_added(before, new_port({{"thread", 2}})), ConfigErrorKind::kInvalid,
                 "params.thread: 2 is not below threads.count 2");
  // A PortConfig built in code gets the same checks as parsed ones.
  PortConfig multicast = new_port();
  multicast.mac->bytes[0] = 0x01;
  expect_refused(
      with_port_added(before, multicast), ConfigErrorKind::kInvalid,
      "params.mac: 01:54:00:00:00:02 is a multicast address, a port needs a unicast MAC");
  PortConfig too_many_queues = new_port();
  const std::uint32_t max = vhost::Device::kMaxQueuePairs;
  too_many_queues.queue_pairs = max + 1;
  expect_refused(with_port_added(before, too_many_queues), ConfigErrorKind::kInvalid,
                 "params.queues: " + std::to_string(max + 1) + " queue pairs; a port takes 1 to " +
                     std::to_string(max));
  PortConfig most_queues = new_port();
  most_queues.queue_pairs = max;
  EXPECT_TRUE(with_port_added(before, most_queues).ok());
  EXPECT_EQ(before, base_config());
}

TEST(ConfigChange, PortRemoved) {
  const Config before = base_config();
  auto r = with_port_removed(before, "vm1");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->ports.empty());
  expect_refused(with_port_removed(before, "vm9"), ConfigErrorKind::kNotFound,
                 "there is no port \"vm9\"");
  // An uplink is not a port.
  expect_refused(with_port_removed(before, "up0"), ConfigErrorKind::kNotFound,
                 "there is no port \"up0\"");
  EXPECT_EQ(before.ports.size(), 1u);
}

TEST(ConfigChange, AddRemoveAddAgain) {
  Config c = base_config();
  for (int i = 0; i < 50; ++i) {
    auto added = with_port_added(c, new_port());
    ASSERT_TRUE(added.ok()) << added.error().message;
    auto removed = with_port_removed(*added, "vm2");
    ASSERT_TRUE(removed.ok()) << removed.error().message;
    c = *removed;
  }
  EXPECT_EQ(c, base_config());
}

TEST(ConfigChange, UplinkAdded) {
  const Config before = base_config();
  auto r = with_uplink_added(before, new_uplink());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->uplinks.size(), 2u);
  // Not even other queues of an interface that is an uplink's.
  r = with_uplink_added(before, new_uplink({{"interface", "eth1"}, {"queues", {2, 3}}}));
  EXPECT_FALSE(r.ok());
}

TEST(ConfigChange, UplinkAddRefusals) {
  const Config before = base_config();
  expect_refused(with_uplink_added(before, new_uplink({{"name", "up0"}})),
                 ConfigErrorKind::kNameInUse,
                 "params.name: \"up0\" is already the name of an uplink");
  expect_refused(with_uplink_added(before, new_uplink({{"name", "vm1"}})),
                 ConfigErrorKind::kNameInUse, "params.name: \"vm1\" is already the name of a port");
  expect_refused(with_uplink_added(before, new_uplink({{"interface", "eth1"}, {"queues", {1}}})),
                 ConfigErrorKind::kInUse,
                 "params.interface: \"eth1\" is already uplink \"up0\"'s (one uplink per "
                 "interface; list more queues in it)");
  expect_refused(with_uplink_added(before, new_uplink({{"thread", 5}})), ConfigErrorKind::kInvalid,
                 "params.thread: 5 is not below threads.count 2");
  EXPECT_EQ(before, base_config());
}

TEST(ConfigChange, UplinkRemoved) {
  const Config before = base_config();
  expect_refused(with_uplink_removed(before, "up0"), ConfigErrorKind::kInUse,
                 "uplink \"up0\" is still the uplink of port \"vm1\"");
  expect_refused(with_uplink_removed(before, "up9"), ConfigErrorKind::kNotFound,
                 "there is no uplink \"up9\"");
  auto without_port = with_port_removed(before, "vm1");
  ASSERT_TRUE(without_port.ok());
  auto r = with_uplink_removed(*without_port, "up0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->uplinks.empty());
}

TEST(ConfigChange, TunablesSetGlobal) {
  const Config before = base_config();
  auto change = parse_tunables_set({{"busy_poll_us", 0}, {"napi_busy_poll", true}});
  ASSERT_TRUE(change.ok()) << change.error().message;
  EXPECT_FALSE(change->port);
  EXPECT_FALSE(change->uplink);
  EXPECT_EQ(change->values.busy_poll_us, 0u);
  auto r = with_tunables_set(before, *change);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tunables.busy_poll_us, 0u);
  EXPECT_TRUE(r->tunables.napi_busy_poll);
  EXPECT_EQ(r->tunables.signal_batch, 32u);  // untouched
}

TEST(ConfigChange, TunablesSetRebalanceIsGlobal) {
  auto change = parse_tunables_set({{"rebalance", "off"},
                                    {"rebalance_interval_s", 2},
                                    {"rebalance_threshold_pct", 50},
                                    {"rebalance_margin_pct", 10}});
  ASSERT_TRUE(change.ok()) << change.error().message;
  auto r = with_tunables_set(base_config(), *change);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tunables.rebalance, dataplane::RebalanceMode::kOff);
  EXPECT_EQ(r->tunables.rebalance_interval_s, 2u);
  EXPECT_EQ(r->tunables.rebalance_threshold_pct, 50u);
  EXPECT_EQ(r->tunables.rebalance_margin_pct, 10u);
  EXPECT_EQ(to_json(r->tunables)["rebalance"], "off");

  auto bad = parse_tunables_set({{"rebalance", "sometimes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ConfigErrorKind::kSchema);
  bad = parse_tunables_set({{"rebalance_interval_s", 0}});
  ASSERT_FALSE(bad.ok());
  bad = parse_tunables_set({{"rebalance_threshold_pct", 101}});
  ASSERT_FALSE(bad.ok());
  bad = parse_tunables_set({{"port", "vm1"}, {"rebalance", "off"}});
  ASSERT_FALSE(bad.ok()) << "a port has no rebalance of its own";
  TunablesChange c;
  c.uplink = "up0";
  c.values.rebalance_margin_pct = 5;
  expect_refused(
      with_tunables_set(base_config(), c), ConfigErrorKind::kInvalid,
      "params: an uplink overrides only tx_inflight_max, napi_busy_poll and busy_poll_budget");
}

TEST(ConfigChange, TunablesSetPortAndUplinkOverrides) {
  const Config before = base_config();
  auto change = parse_tunables_set({{"port", "vm1"}, {"signal_batch", 8}});
  ASSERT_TRUE(change.ok()) << change.error().message;
  auto r = with_tunables_set(before, *change);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ports[0].tunables.signal_batch, 8u);
  EXPECT_FALSE(r->ports[0].tunables.rx_burst);
  EXPECT_EQ(resolve(r->tunables, r->ports[0].tunables).signal_batch, 8u);
  EXPECT_EQ(r->tunables.signal_batch, 32u);  // the global value stays

  change = parse_tunables_set({{"uplink", "up0"}, {"busy_poll_budget", 16}});
  ASSERT_TRUE(change.ok()) << change.error().message;
  r = with_tunables_set(*r, *change);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->uplinks[0].tunables.busy_poll_budget, 16u);
  EXPECT_EQ(r->ports[0].tunables.signal_batch, 8u);

  change = parse_tunables_set({{"port", "vm9"}, {"rx_burst", 8}});
  ASSERT_TRUE(change.ok());
  expect_refused(with_tunables_set(before, *change), ConfigErrorKind::kNotFound,
                 "there is no port \"vm9\"");
  change = parse_tunables_set({{"uplink", "vm1"}, {"napi_busy_poll", true}});
  ASSERT_TRUE(change.ok());
  expect_refused(with_tunables_set(before, *change), ConfigErrorKind::kNotFound,
                 "there is no uplink \"vm1\"");
}

TEST(ConfigChange, TunablesSetRefusals) {
  auto bad = parse_tunables_set({{"port", "vm1"}, {"busy_poll_us", 5}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ConfigErrorKind::kSchema);
  EXPECT_NE(bad.error().message.find("port: unknown field \"busy_poll_us\""), std::string::npos)
      << bad.error().message;
  bad = parse_tunables_set({{"signal_batch", 0}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("params.signal_batch: 0 is below the minimum 1"),
            std::string::npos)
      << bad.error().message;
  bad = parse_tunables_set(json::object());
  ASSERT_FALSE(bad.ok());

  // A change built in code is held to the same scope rules.
  TunablesChange c;
  c.port = "vm1";
  c.values.busy_poll_us = 5;
  expect_refused(with_tunables_set(base_config(), c), ConfigErrorKind::kInvalid,
                 "params: a port overrides only signal_batch, rx_burst, tx_burst and flood_rate");
  c.port.reset();
  c.uplink = "up0";
  expect_refused(
      with_tunables_set(base_config(), c), ConfigErrorKind::kInvalid,
      "params: an uplink overrides only tx_inflight_max, napi_busy_poll and busy_poll_budget");
  TunablesChange zero;
  zero.values.rx_burst = 0;
  auto r = with_tunables_set(base_config(), zero);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tunables.rx_burst: 0 is below the minimum 1");
}

}  // namespace
}  // namespace xdpvhost::daemon

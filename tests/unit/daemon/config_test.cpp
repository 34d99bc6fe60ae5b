// The typed config loader: defaults, every rule beyond the schema, error
// messages that name the field, round trip, files.

#include "config/config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config_rules.hpp"
#include "schemas/schema_registry.hpp"

namespace xdpvhost::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json port(const std::string& name, const std::string& mac) {
  return {{"name", name}, {"socket", "/run/t/" + name + ".sock"}, {"mac", mac}};
}

// Parses and expects an error; returns it.
ConfigError refused(const json& doc) {
  auto r = parse_config(doc);
  EXPECT_FALSE(r.ok()) << doc.dump();
  return r.ok() ? ConfigError{} : r.error();
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "xdpvhost-config-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

TEST(Config, DefaultsOfAnEmptyConfig) {
  auto r = parse_config(json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_TRUE(c.ports.empty());
  EXPECT_TRUE(c.uplinks.empty());
  EXPECT_EQ(c.tunables, Tunables{});
  EXPECT_EQ(c.tunables.busy_poll_us, 50u);
  EXPECT_EQ(c.tunables.signal_batch, 32u);
  EXPECT_EQ(c.tunables.rx_burst, 64u);
  EXPECT_EQ(c.tunables.tx_burst, 64u);
  EXPECT_EQ(c.tunables.tx_inflight_max, 1024u);
  EXPECT_FALSE(c.tunables.napi_busy_poll);
  EXPECT_EQ(c.tunables.busy_poll_budget, 64u);
  EXPECT_EQ(c.threads.count, 1u);
  EXPECT_TRUE(c.threads.cpus.empty());
  EXPECT_EQ(c.control.socket, "/run/xdpvhost/control.sock");
  EXPECT_EQ(c.control.mode, 0660u);
  EXPECT_FALSE(c.control.group);
  EXPECT_EQ(c.metrics.listen, "");
  EXPECT_EQ(c.log.level, LogLevel::kInfo);
  EXPECT_FALSE(c.state_file);
  EXPECT_FALSE(c.bpf_object);
  EXPECT_TRUE(c.mac_learning.prefixes.empty());
  EXPECT_EQ(c.mac_learning.wire_source_age_s, 300u);
  EXPECT_EQ(c.mac_learning.requests, dataplane::LearnRequestRate{});
  EXPECT_EQ(c.mac_learning.requests.per_second, 1u);
  EXPECT_EQ(c.mac_learning.requests.burst, 4u);
}

TEST(Config, PortDefaults) {
  auto r = parse_config({{"ports", {port("vm1", "52:54:00:00:00:01")}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PortConfig& p = r->ports.at(0);
  EXPECT_EQ(p.name, "vm1");
  EXPECT_EQ(p.socket, "/run/t/vm1.sock");
  EXPECT_EQ(p.mode, vhost::SocketMode::kServer);
  EXPECT_EQ(p.mac, net::MacAddress::parse("52:54:00:00:00:01"));
  EXPECT_FALSE(p.uplink);
  EXPECT_EQ(p.queue_pairs, 1u);
  EXPECT_EQ(p.mtu, 1500u);
  EXPECT_FALSE(p.thread);
  EXPECT_TRUE(p.tunables.empty());
}

TEST(Config, AnUplinksL2DomainIsItsOwnNameUnlessSet) {
  auto r = parse_config({{"uplinks",
                          {{{"name", "up0"}, {"interface", "eth0"}},
                           {{"name", "up1"}, {"interface", "eth1"}, {"l2_domain", "up0"}}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->uplinks[0].l2_domain);
  EXPECT_EQ(r->uplinks[0].domain(), "up0");
  EXPECT_EQ(r->uplinks[1].domain(), "up0");
  EXPECT_FALSE(to_json(*r)["uplinks"][0].contains("l2_domain")) << "the default is not written";
  EXPECT_EQ(to_json(*r)["uplinks"][1]["l2_domain"], "up0");
  EXPECT_FALSE(
      parse_config(
          {{"uplinks", {{{"name", "up0"}, {"interface", "eth0"}, {"l2_domain", "no spaces"}}}}})
          .ok());
}

TEST(Config, FullExampleHasEveryValue) {
  const json* doc = SchemaRegistry::embedded().document("examples/config-full.json");
  ASSERT_NE(doc, nullptr);
  auto r = parse_config(*doc);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  ASSERT_EQ(c.ports.size(), 2u);
  EXPECT_EQ(c.ports[0].uplink, "up0");
  EXPECT_EQ(c.ports[0].queue_pairs, 2u);
  EXPECT_EQ(c.ports[0].mtu, 3000u);
  EXPECT_EQ(c.ports[0].thread, 0u);
  EXPECT_EQ(c.ports[0].tunables.signal_batch, 16u);
  EXPECT_EQ(c.ports[0].tunables.rx_burst, 32u);
  EXPECT_EQ(c.ports[0].tunables.tx_burst, 32u);
  EXPECT_EQ(c.ports[1].mode, vhost::SocketMode::kClient);
  EXPECT_EQ(c.ports[1].mac, net::MacAddress::parse("02:00:00:00:00:02"));
  ASSERT_EQ(c.uplinks.size(), 1u);
  const UplinkConfig& u = c.uplinks[0];
  EXPECT_EQ(u.interface, "eth1");
  EXPECT_EQ(u.queues, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  // Without "queues", or with "all": every RX queue the NIC has.
  for (const char* text :
       {R"({"uplinks": [{"name": "a", "interface": "eth1"}]})",
        R"({"uplinks": [{"name": "a", "interface": "eth1", "queues": "all"}]})"}) {
    auto all = parse_config(json::parse(text));
    ASSERT_TRUE(all.ok()) << text << ": " << all.error().message;
    EXPECT_FALSE(all->uplinks[0].queues.has_value()) << text;
    EXPECT_EQ(to_json(all->uplinks[0])["queues"], "all") << text;
  }
  for (const char* bad : {R"({"uplinks": [{"name": "a", "interface": "eth1", "queues": "some"}]})",
                          R"({"uplinks": [{"name": "a", "interface": "eth1", "queues": []}]})"})
    EXPECT_FALSE(parse_config(json::parse(bad)).ok()) << bad;
  EXPECT_EQ(u.bind, xsk::BindMode::kZeroCopy);
  EXPECT_EQ(u.frame_size, 4096u);
  EXPECT_EQ(u.ring_size, 4096u);
  EXPECT_EQ(u.thread, 1u);
  EXPECT_EQ(u.l2_domain, "lan");
  EXPECT_EQ(u.domain(), "lan");
  EXPECT_EQ(u.tunables.tx_inflight_max, 2048u);
  EXPECT_EQ(u.tunables.napi_busy_poll, true);
  EXPECT_EQ(u.tunables.busy_poll_budget, 128u);
  EXPECT_EQ(c.tunables.busy_poll_us, 100u);
  EXPECT_EQ(c.tunables.tx_inflight_max, 4096u);
  EXPECT_EQ(c.threads.count, 2u);
  EXPECT_EQ(c.threads.cpus, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(c.control.mode, 0600u);
  EXPECT_EQ(c.control.group, "xdpvhost");
  EXPECT_EQ(c.metrics.listen, "[::1]:9477");
  EXPECT_EQ(c.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.state_file, "/var/lib/xdpvhost/state.json");
  EXPECT_EQ(c.bpf_object, "/usr/lib/xdpvhost/xdpvhost_steer.bpf.o");
  ASSERT_EQ(c.mac_learning.prefixes.size(), 2u);
  EXPECT_EQ(c.mac_learning.prefixes[0], net::MacPrefix::parse("52:54:00:00:00:00/24"));
  EXPECT_EQ(c.mac_learning.wire_source_age_s, 600u);
  EXPECT_EQ(c.mac_learning.requests, (dataplane::LearnRequestRate{2, 8}));

  Tunables vm1 = resolve(c.tunables, c.ports[0].tunables);
  EXPECT_EQ(vm1.signal_batch, 16u);
  EXPECT_EQ(vm1.busy_poll_us, 100u);
  Tunables vm2 = resolve(c.tunables, c.ports[1].tunables);
  EXPECT_EQ(vm2.signal_batch, 64u);
  Tunables up0 = resolve(c.tunables, u.tunables);
  EXPECT_TRUE(up0.napi_busy_poll);
  EXPECT_EQ(up0.busy_poll_budget, 128u);
  EXPECT_EQ(up0.rx_burst, 128u);
}

TEST(Config, SchemaErrorsNameTheFieldAndListEveryViolation) {
  json doc = {
      {"ports",
       {port("vm1", "52:54"), {{"name", "vm2"}, {"sokcet", "/x"}, {"mac", "52:54:00:00:00:02"}}}},
      {"tunables", {{"signal_batch", 0}}}};
  ConfigError e = refused(doc);
  EXPECT_EQ(e.kind, ConfigErrorKind::kSchema);
  ASSERT_EQ(e.details.size(), 4u) << e.message;
  EXPECT_EQ(e.details[0],
            "ports[0].mac: \"52:54\" does not match ^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$");
  EXPECT_EQ(e.details[1], "ports[1]: missing required field \"socket\"");
  EXPECT_EQ(e.details[2], "ports[1]: unknown field \"sokcet\"");
  EXPECT_EQ(e.details[3], "tunables.signal_batch: 0 is below the minimum 1");
  EXPECT_EQ(e.message, e.details[0] + "; " + e.details[1] + "; " + e.details[2] + " (and 1 more)");
}

TEST(Config, DuplicatePortNames) {
  ConfigError e = refused({{"ports",
                            {port("vm1", "52:54:00:00:00:01"),
                             {{"name", "vm1"}, {"socket", "/b"}, {"mac", "52:54:00:00:00:02"}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kNameInUse);
  EXPECT_EQ(e.message, "ports[1].name: \"vm1\" is already the name of a port");
}

TEST(Config, PortAndUplinkShareTheNameSpace) {
  ConfigError e = refused({{"uplinks", {{{"name", "x"}, {"interface", "eth0"}}}},
                           {"ports", {port("x", "52:54:00:00:00:01")}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kNameInUse);
  EXPECT_EQ(e.message, "ports[0].name: \"x\" is already the name of an uplink");
}

TEST(Config, DuplicateUplinkNames) {
  ConfigError e = refused(
      {{"uplinks",
        {{{"name", "up"}, {"interface", "eth0"}}, {{"name", "up"}, {"interface", "eth1"}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kNameInUse);
  EXPECT_EQ(e.message, "uplinks[1].name: \"up\" is already the name of an uplink");
}

TEST(Config, DuplicateMacs) {
  ConfigError e =
      refused({{"ports", {port("vm1", "52:54:00:00:00:01"), port("vm2", "52:54:00:00:00:01")}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kMacInUse);
  EXPECT_EQ(e.message, "ports[1].mac: 52:54:00:00:00:01 is already the MAC of port \"vm1\"");
  // Case does not make a MAC different.
  e = refused({{"ports", {port("vm1", "52:54:00:00:00:AB"), port("vm2", "52:54:00:00:00:ab")}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kMacInUse);
}

TEST(Config, DuplicateSocketPaths) {
  json a = port("vm1", "52:54:00:00:00:01");
  json b = port("vm2", "52:54:00:00:00:02");
  b["socket"] = a["socket"];
  ConfigError e = refused({{"ports", {a, b}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSocketInUse);
  EXPECT_EQ(e.message,
            "ports[1].socket: \"/run/t/vm1.sock\" is already the socket of port \"vm1\"");

  e = refused({{"ports", {a}}, {"control", {{"socket", "/run/t/vm1.sock"}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSocketInUse);
  EXPECT_EQ(e.message, "ports[0].socket: \"/run/t/vm1.sock\" is the control socket");
}

TEST(Config, PortUplinkMustExist) {
  json p = port("vm1", "52:54:00:00:00:01");
  p["uplink"] = "up9";
  ConfigError e =
      refused({{"ports", {p}}, {"uplinks", {{{"name", "up0"}, {"interface", "eth0"}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kNotFound);
  EXPECT_EQ(e.message, "ports[0].uplink: there is no uplink \"up9\"");
  p["uplink"] = "up0";
  EXPECT_TRUE(
      parse_config({{"ports", {p}}, {"uplinks", {{{"name", "up0"}, {"interface", "eth0"}}}}}).ok());
}

TEST(Config, GuestMtuMustFitWhatTheUplinkCanCarry) {
  json p = port("vm1", "52:54:00:00:00:01");
  p["uplink"] = "up0";
  json up = {{"name", "up0"}, {"interface", "eth0"}};
  UplinkConfig u;
  u.name = "up0";
  u.interface = "eth0";
  // What this kernel allows: with multi-buffer (Linux 6.6+) a descriptor
  // chain, else one 2048-byte UMEM frame after the XDP headroom.
  const nic::UplinkFrameLimit limit = config_rules::static_frame_limit(u);
  p["mtu"] = 9000;
  if (limit.multi_buffer) {
    EXPECT_TRUE(parse_config({{"ports", {p}}, {"uplinks", {up}}}).ok()) << limit.reason;
  } else {
    EXPECT_EQ(refused({{"ports", {p}}, {"uplinks", {up}}}).message,
              "ports[0].mtu: 9000 needs frames of 9018 bytes; uplink \"up0\" (frame_size 2048) "
              "carries at most 1792: " +
                  limit.reason);
  }
  EXPECT_NE(limit.reason.find(limit.multi_buffer ? "MAX_SKB_FRAGS" : "kernel"), std::string::npos)
      << limit.reason;
  p.erase("uplink");
  EXPECT_TRUE(parse_config({{"ports", {p}}, {"uplinks", {up}}}).ok()) << "no uplink, no limit";
}

TEST(Config, ThreadIndexBelowCount) {
  json p = port("vm1", "52:54:00:00:00:01");
  p["thread"] = 2;
  ConfigError e = refused({{"ports", {p}}, {"threads", {{"count", 2}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(e.message, "ports[0].thread: 2 is not below threads.count 2");
  p["thread"] = 1;
  EXPECT_TRUE(parse_config({{"ports", {p}}, {"threads", {{"count", 2}}}}).ok());

  e = refused({{"uplinks", {{{"name", "up0"}, {"interface", "eth0"}, {"thread", 1}}}}});
  EXPECT_EQ(e.message, "uplinks[0].thread: 1 is not below threads.count 1");
}

TEST(Config, CpusOnePerThread) {
  ConfigError e = refused({{"threads", {{"count", 2}, {"cpus", {3}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(e.message, "threads.cpus: 1 entries, but threads.count is 2 (one CPU per thread)");
  EXPECT_TRUE(parse_config({{"threads", {{"count", 2}, {"cpus", {3, 1}}}}}).ok());
}

TEST(Config, SocketPathMustFitSunPath) {
  std::string ok_path = "/" + std::string(106, 'a');  // 107 bytes: the most sun_path holds
  std::string long_path = ok_path + "b";              // 108
  json p = port("vm1", "52:54:00:00:00:01");
  p["socket"] = ok_path;
  EXPECT_TRUE(parse_config({{"ports", {p}}}).ok());
  p["socket"] = long_path;
  ConfigError e = refused({{"ports", {p}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSocketPath);
  EXPECT_EQ(e.message,
            "ports[0].socket: is 108 bytes long, a unix socket path (sun_path) holds at most 107");

  e = refused({{"control", {{"socket", long_path}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSocketPath);
  EXPECT_EQ(e.message.rfind("control.socket: is 108 bytes long", 0), 0u) << e.message;

  p["socket"] = std::string("/run/a\0b", 8);
  e = refused({{"ports", {p}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSocketPath);
  EXPECT_EQ(e.message, "ports[0].socket: holds a NUL byte");

  EXPECT_EQ(check_socket_path(ok_path), "");
  EXPECT_NE(check_socket_path(""), "");
}

TEST(Config, MacMustBeUnicast) {
  ConfigError e = refused({{"ports", {port("vm1", "01:00:5e:00:00:01")}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(e.message,
            "ports[0].mac: 01:00:5e:00:00:01 is a multicast address, a port needs a unicast MAC");
  e = refused({{"ports", {port("vm1", "FF:FF:FF:FF:FF:FF")}}});
  EXPECT_EQ(e.message,
            "ports[0].mac: ff:ff:ff:ff:ff:ff is the broadcast address, a port needs a unicast MAC");
  e = refused({{"ports", {port("vm1", "00:00:00:00:00:00")}}});
  EXPECT_EQ(e.message, "ports[0].mac: 00:00:00:00:00:00 is not a valid port MAC");
  // Locally administered unicast is fine.
  EXPECT_TRUE(parse_config({{"ports", {port("vm1", "02:00:00:00:00:01")}}}).ok());
}

TEST(Config, MacLearningPrefixesWireAgeAndRate) {
  auto r = parse_config({{"mac_learning",
                          {{"prefixes", {"52:54:00:00:00:00/24", "02:00:00:00:00:00/8"}},
                           {"wire_source_age_s", 0},
                           {"relearn_per_s", 0}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->mac_learning.prefixes.size(), 2u);
  EXPECT_EQ(r->mac_learning.prefixes[1].to_string(), "02:00:00:00:00:00/8");
  EXPECT_EQ(r->mac_learning.wire_source_age_s, 0u);
  EXPECT_EQ(to_json(*r)["mac_learning"],
            (json{{"prefixes", {"52:54:00:00:00:00/24", "02:00:00:00:00:00/8"}},
                  {"wire_source_age_s", 0},
                  {"relearn_per_s", 0},
                  {"relearn_burst", 4}}));
  ConfigError e = refused({{"mac_learning", {{"prefixes", {"52:54:00:00:00:01/24"}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(e.message,
            "mac_learning.prefixes[0]: \"52:54:00:00:00:01/24\" sets bits past its length "
            "(aa:bb:cc:00:00:00/24)");
  e = refused({{"mac_learning", {{"prefixes", {"52:54:00/24"}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSchema);
  e = refused({{"mac_learning", {{"wire_source_age_s", 86401}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSchema);
  e = refused({{"mac_learning", {{"relearn_burst", 0}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kSchema);
}

TEST(Config, AnInterfaceIsOneUplinks) {
  // Even on other queues: each uplink attaches the XDP program (its sockets
  // and guest MACs), a second one would replace the first's.
  ConfigError e = refused({{"uplinks",
                            {{{"name", "a"}, {"interface", "eth0"}, {"queues", {0, 1}}},
                             {{"name", "b"}, {"interface", "eth0"}, {"queues", {2}}}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInUse);
  EXPECT_EQ(e.message,
            "uplinks[1].interface: \"eth0\" is already uplink \"a\"'s (one uplink per interface; "
            "list more queues in it)");
  EXPECT_TRUE(parse_config({{"uplinks",
                             {{{"name", "a"}, {"interface", "eth0"}, {"queues", {0, 1, 2}}},
                              {{"name", "c"}, {"interface", "eth1"}, {"queues", {0}}}}}})
                  .ok());
}

TEST(Config, MetricsPortInRange) {
  ConfigError e = refused({{"metrics", {{"listen", "127.0.0.1:70000"}}}});
  EXPECT_EQ(e.kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(e.message, "metrics.listen: port 70000 is above 65535");
  EXPECT_TRUE(parse_config({{"metrics", {{"listen", "127.0.0.1:65535"}}}}).ok());
}

TEST(Config, RoundTrip) {
  for (const auto& path : SchemaRegistry::embedded().paths()) {
    if (path.rfind("examples/config-", 0) != 0) continue;
    auto first = parse_config(*SchemaRegistry::embedded().document(path));
    ASSERT_TRUE(first.ok()) << path << ": " << first.error().message;
    json written = to_json(*first);
    EXPECT_EQ(join_errors(validate(SchemaRegistry::embedded().config(), written)), "") << path;
    auto second = parse_config(written);
    ASSERT_TRUE(second.ok()) << path << ": " << second.error().message;
    EXPECT_EQ(*second, *first) << path;
    EXPECT_EQ(to_json(*second), written) << path;
  }
}

TEST(Config, ToJsonWritesDefaultsAndLeavesOutAbsentOptionals) {
  Config c;
  PortConfig p;
  p.name = "vm1";
  p.socket = "/s";
  p.mac = {0x52, 0x54, 0, 0, 0, 0xab};
  c.ports.push_back(p);
  json j = to_json(c);
  EXPECT_EQ(j["ports"][0], (json{{"name", "vm1"},
                                 {"socket", "/s"},
                                 {"mode", "server"},
                                 {"mac", "52:54:00:00:00:ab"},
                                 {"mac_policy", "fixed"},
                                 {"queues", 1},
                                 {"mtu", 1500}}));
  EXPECT_EQ(
      j["control"],
      (json{{"socket", "/run/xdpvhost/control.sock"}, {"mode", "0660"}, {"idle_timeout_s", 60}}));
  EXPECT_EQ(j["socket_dirs"], json::array());
  EXPECT_EQ(j["security"], (json{{"seccomp", true}}));
  EXPECT_EQ(j["mac_learning"], (json{{"prefixes", json::array()},
                                     {"wire_source_age_s", 300},
                                     {"relearn_per_s", 1},
                                     {"relearn_burst", 4}}));
  EXPECT_EQ(j["threads"], (json{{"count", 1}}));
  EXPECT_EQ(j["tunables"].size(), 12u);
  EXPECT_EQ(j["metrics"]["listen"], "");
  EXPECT_EQ(j["log"]["level"], "info");
  EXPECT_FALSE(j.contains("state_file"));
  EXPECT_FALSE(j.contains("bpf_object"));
  EXPECT_EQ(to_json(dataplane::PortTunableOverrides{}), json::object());
  EXPECT_EQ(to_json(dataplane::UplinkTunableOverrides{std::nullopt, false, std::nullopt}),
            (json{{"napi_busy_poll", false}}));
}

TEST(Config, CheckConfigAppliesTheSchemaToConfigsBuiltInCode) {
  Config c;
  c.tunables.signal_batch = 0;
  auto e = check_config(c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ConfigErrorKind::kSchema);
  EXPECT_EQ(e->message, "tunables.signal_batch: 0 is below the minimum 1");
  EXPECT_FALSE(check_config(Config{}));
}

TEST(Config, ParsePortForPortAdd) {
  auto r = parse_port({{"name", "vm3"},
                       {"socket", "/run/vm3.sock"},
                       {"mac", "52:54:00:00:00:03"},
                       {"uplink", "up0"},
                       {"thread", 7}});
  ASSERT_TRUE(r.ok()) << r.error().message;  // references are checked when it is added
  EXPECT_EQ(r->uplink, "up0");
  EXPECT_EQ(r->thread, 7u);

  auto bad = parse_port({{"name", "vm3"}, {"socket", "/s"}, {"mac", "52:54"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ConfigErrorKind::kSchema);
  EXPECT_EQ(bad.error().details.at(0).rfind("params.mac: \"52:54\" does not match", 0), 0u);

  bad = parse_port({{"name", "vm3"}, {"socket", "/s"}, {"mac", "33:33:00:00:00:01"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ConfigErrorKind::kInvalid);
  EXPECT_EQ(bad.error().message.rfind("params.mac: 33:33:00:00:00:01 is a multicast address", 0),
            0u);

  bad = parse_port(
      {{"name", "vm3"}, {"socket", "/" + std::string(200, 'x')}, {"mac", "52:54:00:00:00:03"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ConfigErrorKind::kSocketPath);
  EXPECT_EQ(bad.error().message.rfind("params.socket: is 201 bytes long", 0), 0u);

  bad = parse_port(json::array(), "ports[4]");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "ports[4]: expected object, got array []");
}

TEST(Config, ParseUplinkForUplinkAdd) {
  auto r = parse_uplink({{"name", "up1"}, {"interface", "eth2"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->queues.has_value()) << "the default: every RX queue the NIC has";
  EXPECT_EQ(r->bind, xsk::BindMode::kAuto);
  EXPECT_EQ(r->frame_size, 2048u);
  EXPECT_EQ(r->ring_size, 2048u);
  auto bad = parse_uplink({{"name", "up1"}, {"interface", "eth2"}, {"ring_size", 100}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("params.ring_size: 100 is not one of 64, 128,", 0), 0u);
}

TEST(Config, EnumHelpers) {
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_FALSE(parse_log_level("warning"));
  for (auto l : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn,
                 LogLevel::kError, LogLevel::kOff}) {
    EXPECT_EQ(parse_log_level(to_string(l)), l);
  }
  EXPECT_STREQ(vhost::to_string(vhost::SocketMode::kClient), "client");
  EXPECT_STREQ(xsk::to_string(xsk::BindMode::kZeroCopy), "zerocopy");
}

TEST(ConfigFile, LoadsAndNamesTheFileInErrors) {
  TempDir dir;
  const std::string path = (dir.path() / "c.json").string();
  {
    std::ofstream out(path);
    out << R"({"ports": [{"name": "vm1", "socket": "/run/vm1.sock", "mac": "52:54:00:00:00:01"}]})";
  }
  auto r = load_config_file(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ports.at(0).name, "vm1");

  {
    std::ofstream out(path);
    out << "{\n  \"ports\": [\n  }\n";
  }
  r = load_config_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ConfigErrorKind::kSyntax);
  EXPECT_EQ(r.error().message.rfind(path + ": not valid JSON: ", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;

  {
    std::ofstream out(path);
    out << R"({"tunables": {"signal_batch": 0}})";
  }
  r = load_config_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, path + ": tunables.signal_batch: 0 is below the minimum 1");

  r = load_config_file((dir.path() / "missing.json").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ConfigErrorKind::kIo);
  EXPECT_NE(r.error().message.find("missing.json: cannot open: No such file or directory"),
            std::string::npos)
      << r.error().message;
}

TEST(ConfigFile, SaveIsAtomicAndLoadsBackEqual) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  auto full = parse_config(*SchemaRegistry::embedded().document("examples/config-full.json"));
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(save_config_file(*full, path), "");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
  auto back = load_config_file(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, *full);

  // A second save replaces the first.
  Config smaller;
  ASSERT_EQ(save_config_file(smaller, path), "");
  back = load_config_file(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, smaller);

  std::string err = save_config_file(smaller, (dir.path() / "no-such-dir" / "s.json").string());
  EXPECT_NE(err.find("cannot create a temporary file"), std::string::npos) << err;
}

TEST(Config, WorldWritableControlSocketIsRefused) {
  auto r = parse_config(json{{"control", {{"mode", "0666"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("control.mode: 0666 lets every local user", 0), 0u)
      << r.error().message;
  EXPECT_TRUE(parse_config(json{{"control", {{"mode", "0664"}}}}).ok());
  EXPECT_TRUE(parse_config(json{{"control", {{"mode", "0600"}}}}).ok());
}

TEST(Config, PortSocketsOnlyBelowSocketDirs) {
  const json port{{"name", "vm1"}, {"socket", "/run/other/vm1.sock"}, {"mac", "52:54:00:00:00:01"}};
  auto r = parse_config(json{{"socket_dirs", {"/run/xdpvhost/claims"}}, {"ports", {port}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ConfigErrorKind::kSocketPath);
  EXPECT_NE(r.error().message.find("is not below any of socket_dirs (/run/xdpvhost/claims)"),
            std::string::npos)
      << r.error().message;
  // "/run/xdpvhost/claims2" is not below "/run/xdpvhost/claims".
  json sibling = port;
  sibling["socket"] = "/run/xdpvhost/claims2/vm1.sock";
  EXPECT_FALSE(parse_config(json{{"socket_dirs", {"/run/xdpvhost/claims"}}, {"ports", {sibling}}}));
  json below = port;
  below["socket"] = "/run/xdpvhost/claims/0123456789ab/vhost.sock";
  EXPECT_TRUE(parse_config(
                  json{{"socket_dirs", {"/var/run/x", "/run/xdpvhost/claims"}}, {"ports", {below}}})
                  .ok());
  // Without socket_dirs: anywhere.
  EXPECT_TRUE(parse_config(json{{"ports", {port}}}).ok());
  // The directories themselves are absolute and normal.
  auto bad = parse_config(json{{"socket_dirs", {"/run/../etc"}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("socket_dirs[0]"), std::string::npos) << bad.error().message;
}

TEST(Config, SocketPathsAreAbsoluteAndNormal) {
  for (const char* path : {"vm1.sock", "/run/x/../vm1.sock", "/run//vm1.sock", "/run/./vm1.sock"}) {
    auto r = parse_port(json{{"name", "vm1"}, {"socket", path}, {"mac", "52:54:00:00:00:01"}});
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error().kind, ConfigErrorKind::kSocketPath) << path;
  }
  auto r = parse_config(json{{"control", {{"socket", "control.sock"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ConfigErrorKind::kSocketPath);
}

TEST(StateFile, HoldsPortsAndUplinksWrittenMode0600WithoutFollowingSymlinks) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  // A symlink at the fixed temporary name of older versions, and a victim behind it.
  const std::string victim = (dir.path() / "victim").string();
  { std::ofstream(victim) << "untouched"; }
  fs::create_symlink(victim, path + ".tmp");
  RunTimeState state;
  auto port = parse_port(json{{"name", "vm2"}, {"socket", "/run/x/vm2.sock"}, {"mode", "client"}});
  ASSERT_TRUE(port.ok()) << port.error().message;
  state.ports.push_back(*port);
  auto uplink = parse_uplink(json{{"name", "up0"}, {"interface", "eth1"}});
  ASSERT_TRUE(uplink.ok());
  state.uplinks.push_back(*uplink);
  ASSERT_EQ(save_state_file(state, path), "");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "untouched");
  // Only the state file and what the test made: no temporary left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 3);
  auto back = load_state_file(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->state, state);
  EXPECT_TRUE(back->skipped.empty());

  // A symlink at the state file's own name is replaced, not written through.
  fs::remove(path);
  fs::create_symlink(victim, path);
  ASSERT_EQ(save_state_file(state, path), "");
  EXPECT_FALSE(fs::is_symlink(path));
  std::ifstream again(victim);
  std::string text2((std::istreambuf_iterator<char>(again)), {});
  EXPECT_EQ(text2, "untouched");
}

TEST(StateFile, AFifoOrDirectoryThereIsAnErrorNotAHang) {
  TempDir dir;
  const std::string fifo = (dir.path() / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = load_state_file(fifo);  // a blocking open would wait for a writer, for ever
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  auto d = load_state_file(dir.path().string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("not a regular file"), std::string::npos) << d.error().message;
}

TEST(StateFile, AbsentIsEmptyAndBadEntriesAreSkipped) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  auto none = load_state_file(path);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->state, RunTimeState{});
  // An older state file was a whole config: its ports and uplinks are read, the rest ignored.
  {
    std::ofstream(path)
        << R"({"ports": [{"name": "vm1", "socket": "/s/vm1.sock", "mac": "52:54:00:00:00:01"},
                                         {"name": "bad", "socket": "relative.sock"}],
                              "control": {"socket": "/x.sock"}, "log": {"level": "debug"}})";
  }
  auto r = load_state_file(path);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->state.ports.size(), 1u);
  EXPECT_EQ(r->state.ports[0].name, "vm1");
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].rfind("ports[1].socket", 0), 0u) << r->skipped[0];
  { std::ofstream(path) << "[1, 2]"; }
  EXPECT_FALSE(load_state_file(path).ok());
}

}  // namespace
}  // namespace xdpvhost::daemon

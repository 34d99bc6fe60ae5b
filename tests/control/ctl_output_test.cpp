// xdpvhostctl's pieces that need no daemon: tables, value parsing, the
// human renderings of documented results.

#include <gtest/gtest.h>

#include <sstream>

#include "commands.hpp"
#include "human_views.hpp"
#include "stats_view.hpp"
#include "text_table.hpp"

namespace xdpvhost::ctl {
namespace {

using nlohmann::json;

TEST(TextTable, PadsAndAligns) {
  TextTable t({"NAME", "COUNT"}, {false, true});
  t.add({"vm1", "5"});
  t.add({"longer-name", "12345"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "NAME         COUNT\n"
            "vm1              5\n"
            "longer-name  12345\n");
}

TEST(TextTable, Formats) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_rate(12.25), "12.2");
}

TEST(ParseValue, JsonLiteralsElseText) {
  EXPECT_EQ(parse_value("32"), json(32));
  EXPECT_EQ(parse_value("true"), json(true));
  EXPECT_EQ(parse_value("0"), json(0));
  EXPECT_EQ(parse_value("abc"), json("abc"));
  EXPECT_EQ(parse_value("{\"a\":1}"), json("{\"a\":1}"));  // objects are not tunable values
}

TEST(Scope, Params) {
  EXPECT_EQ(Scope{}.params(), json::object());
  EXPECT_EQ((Scope{"vm1", std::nullopt}.params()), (json{{"port", "vm1"}}));
  EXPECT_EQ((Scope{std::nullopt, "up0"}.params()), (json{{"uplink", "up0"}}));
}

TEST(HumanViews, PortListAndMissingMembers) {
  std::ostringstream out;
  print_port_list(json::parse(R"([{"name":"vm1","socket":"/s","mode":"server",
      "mac":"52:54:00:00:00:01","queue_pairs":1,"mtu":1500,"thread":0,"state":"running"}])"),
                  out);
  EXPECT_NE(out.str().find("vm1   running  52:54:00:00:00:01"), std::string::npos) << out.str();
  std::ostringstream none;
  print_port_list(json::array(), none);
  EXPECT_EQ(none.str(), "no ports\n");
  EXPECT_EQ(cell(json::object(), "x"), "-");
  EXPECT_EQ(cell(json{{"x", nullptr}}, "x"), "-");
  EXPECT_EQ(cell(json{{"x", json::array({"a", "b"})}}, "x"), "a,b");
}

TEST(StatsView, RatesFromThePreviousSample) {
  const json before = json::parse(R"({"ports":{"vm1":{"rx_packets":100,"tx_packets":0,
      "rx_bytes":0,"tx_bytes":0,"kicks":0,"interrupts":0,"interrupts_suppressed":0,
      "drops":{}}},"uplinks":{},"threads":[]})");
  json now = before;
  now["ports"]["vm1"]["rx_packets"] = 300;
  now["ports"]["vm1"]["drops"]["no_rx_buffer"] = 7;
  std::ostringstream out;
  print_stats(now, before, 2.0, out);
  EXPECT_NE(out.str().find("RX PPS"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("100.0"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("vm1: no_rx_buffer=7"), std::string::npos) << out.str();
  std::ostringstream single;
  print_stats(now, nullptr, 0, single);
  EXPECT_EQ(single.str().find("RX PPS"), std::string::npos);
}

}  // namespace
}  // namespace xdpvhost::ctl

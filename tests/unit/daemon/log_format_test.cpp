// The daemon's log lines (runtime/log_format.hpp): JSON lines with the
// port's VM, text, journald priorities; written through a real spdlog
// logger into a stream.

#include "runtime/log_format.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "config/config.hpp"

namespace xdpvhost::daemon {
namespace {

using nlohmann::json;

class LogFormatTest : public ::testing::Test {
 protected:
  std::shared_ptr<spdlog::logger> logger(LogFormat format, bool journal) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto l = std::make_shared<spdlog::logger>("xdpvhostd", sink);
    l->set_formatter(std::make_unique<LogLineFormatter>(format, journal, context_));
    l->set_level(spdlog::level::trace);
    return l;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> all;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) all.push_back(line);
    return all;
  }
  std::vector<json> events() const {
    std::vector<json> all;
    for (const auto& line : lines()) all.push_back(json::parse(line));
    return all;
  }

  std::ostringstream out_;
  PortLogContext context_;
};

TEST_F(LogFormatTest, JsonLinesCarryThePortsVmAndTheUplinksName) {
  context_.set("vm1-net0", controller::PortOwner{"tenant-a", "vm1", "vm1-vhost-x7"});
  context_.set("bare", std::nullopt);
  auto log = logger(LogFormat::kJson, false);
  log->info("port vm1-net0: connected to /run/x.sock");
  log->warn("port bare: second frontend connection refused");
  log->error("uplink up0: link down");
  log->info("portal x: not a port");
  log->debug("xdpvhostd running: 1 service thread(s)");
  const auto e = events();
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0]["message"], "port vm1-net0: connected to /run/x.sock");
  EXPECT_EQ(e[0]["level"], "info");
  EXPECT_EQ(e[0]["logger"], "xdpvhostd");
  EXPECT_EQ(e[0]["port"], "vm1-net0");
  EXPECT_EQ(e[0]["namespace"], "tenant-a");
  EXPECT_EQ(e[0]["vm"], "vm1");
  EXPECT_EQ(e[0]["claim"], "vm1-vhost-x7");
  EXPECT_TRUE(std::string(e[0]["time"]).ends_with("Z"));
  EXPECT_EQ(std::string(e[0]["time"]).size(), std::string("2026-12-07T01:02:03.456Z").size());
  EXPECT_EQ(e[1]["level"], "warning");
  EXPECT_EQ(e[1]["port"], "bare");
  EXPECT_FALSE(e[1].contains("namespace")) << "a port without an owner is nobody's VM";
  EXPECT_EQ(e[2]["level"], "error");
  EXPECT_EQ(e[2]["uplink"], "up0");
  EXPECT_FALSE(e[2].contains("port"));
  EXPECT_FALSE(e[3].contains("port"));
  EXPECT_EQ(e[4]["level"], "debug");
  EXPECT_EQ(e[4].size(), 4u) << e[4].dump();
}

TEST_F(LogFormatTest, AForgottenPortsLinesNoLongerNameItsVm) {
  context_.set("p", controller::PortOwner{"ns", "vm", ""});
  auto log = logger(LogFormat::kJson, false);
  log->info("port p: added");
  context_.forget("p");
  log->info("port p: removed");
  const auto e = events();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["vm"], "vm");
  EXPECT_FALSE(e[0].contains("claim")) << "empty fields are left out";
  EXPECT_FALSE(e[1].contains("vm"));
  EXPECT_EQ(e[1]["port"], "p");
}

TEST_F(LogFormatTest, AnyBytesInAMessageStayOneValidJsonLine) {
  auto log = logger(LogFormat::kJson, false);
  log->warn("port p: peer said \"\xff\xfe\" and\nthen \x01 {}", "\\");
  const auto l = lines();
  ASSERT_EQ(l.size(), 1u) << out_.str();
  const json e = json::parse(l[0]);
  const std::string message = e["message"];
  EXPECT_NE(message.find("\nthen \x01 \\"), std::string::npos) << message;
  EXPECT_NE(message.find("\xef\xbf\xbd"), std::string::npos) << "invalid UTF-8 replaced";
}

TEST_F(LogFormatTest, UnderTheJournalEveryLineStartsWithItsPriority) {
  {
    auto log = logger(LogFormat::kText, true);
    log->critical("stalled");
    log->error("a\nb");
    log->warn("w");
    log->info("i");
    log->debug("d");
    log->trace("t");
  }
  const auto l = lines();
  ASSERT_EQ(l.size(), 7u) << out_.str();
  const std::vector<std::string> prefixes{"<2>", "<3>", "<3>", "<4>", "<6>", "<7>", "<7>"};
  for (std::size_t i = 0; i < l.size(); ++i)
    EXPECT_TRUE(l[i].starts_with(prefixes[i])) << i << ": " << l[i];
  EXPECT_EQ(l[2], "<3>b");
  EXPECT_NE(l[3].find(" warning w"), std::string::npos) << l[3];
  out_.str("");
  logger(LogFormat::kJson, true)->warn("port p: x");
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_TRUE(lines()[0].starts_with("<4>{\"")) << lines()[0];
  EXPECT_EQ(json::parse(lines()[0].substr(3))["port"], "p");
}

TEST_F(LogFormatTest, TextLinesAreAsBefore) {
  logger(LogFormat::kText, false)->info("port p: added");
  const auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_TRUE(l[0].ends_with(" info port p: added")) << l[0];
  EXPECT_EQ(l[0][4], '-');
  EXPECT_EQ(l[0][10], 'T');
}

TEST(StderrIsJournal, OnlyWhenJournalStreamNamesStderr) {
  struct stat st {};
  ASSERT_EQ(::fstat(2, &st), 0);
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const char* saved = ::getenv("JOURNAL_STREAM");
  const std::string kept = saved ? saved : "";
  ::setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(stderr_is_journal());
  ::setenv("JOURNAL_STREAM",
           (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  EXPECT_FALSE(stderr_is_journal());
  ::setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(stderr_is_journal());
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal());
  if (saved) ::setenv("JOURNAL_STREAM", kept.c_str(), 1);
}

TEST(LogFormatConfig, TheConfigNamesTheFormat) {
  json doc = {{"log", {{"format", "json"}}}};
  auto parsed = parse_config(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed.value().log.format, LogFormat::kJson);
  EXPECT_EQ(to_json(parsed.value())["log"]["format"], "json");
  EXPECT_EQ(parse_config(json::object()).value().log.format, LogFormat::kText);
  EXPECT_FALSE(parse_config(json{{"log", {{"format", "xml"}}}}).ok());
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(parse_log_format("JSON"), std::nullopt);
}

}  // namespace
}  // namespace xdpvhost::daemon

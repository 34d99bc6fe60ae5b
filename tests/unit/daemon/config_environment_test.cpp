// "${NAME}" in the config file (config/config_environment.hpp): expanded in
// string values only, from the lookup given; unset names and malformed
// references are errors naming the field; IPv6 hosts get brackets.

#include "config/config_environment.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "config/config.hpp"

namespace xdpvhost::daemon {
namespace {

using nlohmann::json;

EnvironmentLookup from(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ConfigEnvironment, NamedVariablesInStringValuesOnly) {
  json doc = {{"metrics", {{"listen", "${NODE_IP}:9477"}}},
              {"socket_dirs", {"/run/${POD_NS}/claims", "/plain", "cost $5", "$NOT_EXPANDED"}},
              {"${KEY}", "keys stay"},
              {"threads", {{"count", 2}}}};
  ASSERT_EQ(expand_environment(doc, from({{"NODE_IP", "10.0.0.7"}, {"POD_NS", "xv"}})), "");
  EXPECT_EQ(doc["metrics"]["listen"], "10.0.0.7:9477");
  EXPECT_EQ(doc["socket_dirs"], json({"/run/xv/claims", "/plain", "cost $5", "$NOT_EXPANDED"}));
  EXPECT_EQ(doc["${KEY}"], "keys stay");
  EXPECT_EQ(doc["threads"]["count"], 2);
}

TEST(ConfigEnvironment, AnIpv6HostGetsBracketsBeforeAPort) {
  json doc = {{"a", "${IP}:9477"}, {"b", "[${IP}]:9477"}, {"c", "${IP}"}, {"d", "${V4}:1"}};
  ASSERT_EQ(expand_environment(doc, from({{"IP", "fd00::7"}, {"V4", "10.0.0.1"}})), "");
  EXPECT_EQ(doc["a"], "[fd00::7]:9477");
  EXPECT_EQ(doc["b"], "[fd00::7]:9477");
  EXPECT_EQ(doc["c"], "fd00::7");
  EXPECT_EQ(doc["d"], "10.0.0.1:1");
}

TEST(ConfigEnvironment, UnsetAndMalformedReferencesNameTheField) {
  json unset = {{"metrics", {{"listen", "${NODE_IP}:9477"}}}};
  EXPECT_EQ(expand_environment(unset, from({})), "metrics.listen: ${NODE_IP} is not set");
  for (const char* bad : {"${", "${}", "${1X}", "${A-B}", "${OPEN"}) {
    json doc = {{"ports", {{{"socket", bad}}}}};
    const std::string error = expand_environment(doc, from({{"A", "x"}, {"OPEN", "y"}}));
    EXPECT_TRUE(error.starts_with("ports[0].socket: ")) << bad << ": " << error;
    EXPECT_NE(error.find("not followed by a NAME"), std::string::npos) << error;
  }
  json literal = {{"s", "$${HOME} and $$"}};
  ASSERT_EQ(expand_environment(literal, from({})), "");
  EXPECT_EQ(literal["s"], "${HOME} and $$");
  json value_not_rescanned = {{"s", "${A}"}};
  ASSERT_EQ(expand_environment(value_not_rescanned, from({{"A", "${B}"}})), "");
  EXPECT_EQ(value_not_rescanned["s"], "${B}");
}

TEST(ConfigEnvironment, TheFileIsExpandedAndCheckedAfterwards) {
  char path[] = "/tmp/xdpvhost-env-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << R"({"metrics": {"listen": "${XV_TEST_NODE_IP}:9477"}})";
  auto loaded = load_config_file(path, from({{"XV_TEST_NODE_IP", "fd00::9"}}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded.value().metrics.listen, "[fd00::9]:9477");
  auto unset = load_config_file(path, from({}));
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.error().message,
            std::string(path) + ": metrics.listen: ${XV_TEST_NODE_IP} is not set");
  // The rules run on what was expanded.
  auto bad = load_config_file(path, from({{"XV_TEST_NODE_IP", "10.0.0.1:80"}}));
  EXPECT_FALSE(bad.ok());
  // Text from elsewhere (the control socket, the state file) is never expanded.
  auto text = parse_config_text(R"({"socket_dirs": ["/run/${X}"]})");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text.value().socket_dirs, std::vector<std::string>{"/run/${X}"});
  std::remove(path);
}

}  // namespace
}  // namespace xdpvhost::daemon

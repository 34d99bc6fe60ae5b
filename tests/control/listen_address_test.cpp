#include "listen_address.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::daemon::metrics {
namespace {

TEST(ListenAddress, Ipv4HostAndIpv6) {
  std::string error;
  auto a = parse_listen_address("127.0.0.1:9477", error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9477);
  auto b = parse_listen_address("[::1]:19478", error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 19478);
  auto c = parse_listen_address("localhost:1", error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->host, "localhost");
  auto d = parse_listen_address("[::]:65535", error);
  ASSERT_TRUE(d) << error;
  EXPECT_EQ(d->host, "::");
  EXPECT_EQ(d->port, 65535);
}

TEST(ListenAddress, Refusals) {
  for (const char* bad : {"", ":9477", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:12a", "::1:9477", "[::1:9477", "[]:9477", "host:999999"}) {
    std::string error;
    EXPECT_FALSE(parse_listen_address(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nic/xdp_program.hpp"

namespace xdpvhost::nic {
namespace {
TEST(XdpMode, ParsesTheConfigNamesAndRoundTrips) {
  for (const XdpModeRequest m :
       {XdpModeRequest::kAuto, XdpModeRequest::kNative, XdpModeRequest::kSkb}) {
    EXPECT_EQ(parse_xdp_mode(to_string(m)), m);
  }
  EXPECT_EQ(parse_xdp_mode("generic"), XdpModeRequest::kSkb);
  EXPECT_EQ(parse_xdp_mode("drv"), XdpModeRequest::kNative);
  EXPECT_FALSE(parse_xdp_mode("hw"));
  EXPECT_STREQ(to_string(XdpMode::kSkb), "skb");
}

TEST(BpfObjectPath, EnvironmentOverridesTheBuildTree) {
  ::unsetenv("XDPVHOST_BPF_OBJECT");
  EXPECT_EQ(default_bpf_object_path(), XDPVHOST_BPF_OBJECT);  // built before the tests
  ::setenv("XDPVHOST_BPF_OBJECT", "/nonexistent/x.o", 1);
  EXPECT_EQ(default_bpf_object_path(), "/nonexistent/x.o");
  ::unsetenv("XDPVHOST_BPF_OBJECT");
}

}  // namespace
}  // namespace xdpvhost::nic

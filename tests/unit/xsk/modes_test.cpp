#include <gtest/gtest.h>

#include <string>

#include "xsk/xdp_program.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::xsk {
namespace {

TEST(BindMode, ParsesTheConfigNamesAndRoundTrips) {
  for (const BindMode m : {BindMode::kAuto, BindMode::kZeroCopy, BindMode::kCopy}) {
    EXPECT_EQ(parse_bind_mode(to_string(m)), m);
  }
  EXPECT_EQ(parse_bind_mode("zero-copy"), BindMode::kZeroCopy);
  EXPECT_FALSE(parse_bind_mode("zc"));
  EXPECT_FALSE(parse_bind_mode(""));
}

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

TEST(WakeupResult, HasNames) {
  EXPECT_STREQ(to_string(WakeupResult::kAgain), "again");
  EXPECT_STREQ(to_string(WakeupResult::kNetDown), "net_down");
}

TEST(BpfObjectPath, EnvironmentOverridesTheBuildTree) {
  ::unsetenv("XDPVHOST_BPF_OBJECT");
  EXPECT_EQ(default_bpf_object_path(), XDPVHOST_BPF_OBJECT);  // built before the tests
  ::setenv("XDPVHOST_BPF_OBJECT", "/nonexistent/x.o", 1);
  EXPECT_EQ(default_bpf_object_path(), "/nonexistent/x.o");
  ::unsetenv("XDPVHOST_BPF_OBJECT");
}

}  // namespace
}  // namespace xdpvhost::xsk

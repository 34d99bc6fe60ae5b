// The BPF program and the C++ loader share xdp_steer_abi.h; these checks pin
// the layouts the kernel maps were created with.
#include <gtest/gtest.h>

#include <cstddef>

#include "xdp_steer_abi.h"

namespace {

TEST(XdpSteerAbi, KeyAndValueLayouts) {
  EXPECT_EQ(sizeof(xdp_steer_mac_key), 8u);  // 6 address bytes + zero padding
  EXPECT_EQ(offsetof(xdp_steer_mac_key, pad), 6u);
  EXPECT_EQ(sizeof(xdp_steer_mac_value), 8u);
  EXPECT_EQ(sizeof(xdp_steer_config), 8u);
  EXPECT_EQ(offsetof(xdp_steer_config, flags), 4u);
}

TEST(XdpSteerAbi, ProgramNameFitsTheKernelsNameField) {
  // BPF_OBJ_NAME_LEN is 16 including the NUL; stale detection compares names.
  EXPECT_LT(sizeof(XDP_STEER_PROG_NAME), 16u);
}

TEST(XdpSteerAbi, WireSourcesAreSampledByAPowerOfTwo) {
  // The program keeps one in SAMPLE with a mask.
  EXPECT_EQ(XDP_STEER_WIRE_SOURCE_SAMPLE & (XDP_STEER_WIRE_SOURCE_SAMPLE - 1), 0);
  EXPECT_GT(XDP_STEER_WIRE_SOURCE_SAMPLE, 1);
}

TEST(XdpSteerAbi, CountersAreDense) {
  EXPECT_EQ(XDP_STEER_STAT_REDIRECTED, 0);
  EXPECT_EQ(XDP_STEER_STAT_COUNT, 7);
}

}  // namespace

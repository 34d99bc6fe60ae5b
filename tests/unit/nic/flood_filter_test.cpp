// The flood socket's classic BPF filter, run by the kernel on an AF_UNIX
// datagram socket (no privileges needed): the datagram bytes stand in for
// the frame, and pkttype reads as PACKET_HOST there. The PACKET_OUTGOING
// branch is covered by the integration suite on a real AF_PACKET socket.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "sys/unique_fd.hpp"
#include "nic/flood_socket.hpp"

namespace xdpvhost::nic {
namespace {

class FloodFilter : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, fds), 0);
    tx_.reset(fds[0]);
    rx_.reset(fds[1]);
    const sock_fprog& prog = FloodSocket::filter();
    ASSERT_EQ(::setsockopt(rx_.get(), SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog), 0);
  }

  // Sends a 60-byte frame to `dst`; returns whether it passed the filter.
  bool passes(std::array<std::uint8_t, 6> dst) {
    std::vector<std::uint8_t> frame(60, 0);
    std::copy(dst.begin(), dst.end(), frame.begin());
    frame[6] = 0x02;  // some unicast source
    frame[12] = 0x08;
    EXPECT_EQ(::send(tx_.get(), frame.data(), frame.size(), 0), 60);
    std::uint8_t buf[128];
    const ssize_t n = ::recv(rx_.get(), buf, sizeof buf, 0);
    if (n < 0) {
      EXPECT_EQ(errno, EAGAIN);
      return false;
    }
    EXPECT_EQ(n, 60);
    return true;
  }

  sys::UniqueFd tx_, rx_;
};

TEST_F(FloodFilter, AcceptsBroadcast) {
  EXPECT_TRUE(passes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST_F(FloodFilter, AcceptsIpv4AndIpv6Multicast) {
  EXPECT_TRUE(passes({0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}));
  EXPECT_TRUE(passes({0x33, 0x33, 0xff, 0x00, 0x00, 0x01}));  // solicited-node (ND)
}

TEST_F(FloodFilter, RejectsUnicast) {
  EXPECT_FALSE(passes({0x02, 0x00, 0x00, 0x00, 0x00, 0x01}));
  EXPECT_FALSE(passes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff}));  // only the group bit counts
}

}  // namespace
}  // namespace xdpvhost::nic

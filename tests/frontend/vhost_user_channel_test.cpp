// VhostUserChannel over a socketpair: wire format, fds, replies, REPLY_ACK,
// timeouts and a peer that misbehaves.

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "frontend/vhost_user_channel.hpp"
#include "sys/event_fd.hpp"

namespace xdpvhost::testing {
namespace {

using namespace std::chrono_literals;
using vhost_user::Request;

struct Pair {
  Pair() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    frontend = VhostUserChannel(sys::UniqueFd(sv[0]));
    backend = VhostUserChannel(sys::UniqueFd(sv[1]));
    frontend.set_reply_timeout(2s);
  }
  VhostUserChannel frontend;
  VhostUserChannel backend;  // used only to read and to write replies

  void reply_u64(std::uint32_t request, std::uint64_t value) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&value);
    ASSERT_TRUE(backend.send_raw(request, vhost_user::kVersion | vhost_user::kFlagReply,
                                 std::span<const std::uint8_t>(p, 8)));
  }
};

TEST(FrontendVhostUserChannel, HeaderPayloadAndFdOnTheWire) {
  Pair p;
  sys::EventFd kick;
  ASSERT_TRUE(p.frontend.set_vring_kick(3, kick.get()));
  auto msg = p.backend.receive(1s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->request, vhost_user::to_u32(Request::kSetVringKick));
  EXPECT_EQ(msg->flags, vhost_user::kVersion);
  EXPECT_EQ(msg->u64(), 3u);
  ASSERT_EQ(msg->fds.size(), 1u);
  // The received fd is the same eventfd.
  sys::EventFd received(std::move(msg->fds[0]));
  ASSERT_TRUE(received.notify());
  EXPECT_EQ(kick.drain(), 1u);

  ASSERT_TRUE(p.frontend.set_vring_call(5, -1));  // polling: invalid-fd flag, no fd
  msg = p.backend.receive(1s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->u64(), 5u | vhost_user::kVringInvalidFd);
  EXPECT_TRUE(msg->fds.empty());

  ASSERT_EQ(p.frontend.sent().size(), 2u);
  EXPECT_EQ(p.frontend.sent()[0].fd_count, 1u);
  EXPECT_EQ(p.frontend.sent()[1].fd_count, 0u);
}

TEST(FrontendVhostUserChannel, MemoryTableCarriesOnlyUsedRegions) {
  Pair p;
  const vhost_user::MemoryRegion regions[2] = {{0, 4096, 0x7f0000000000, 0},
                                               {1ull << 32, 4096, 0x7f0000001000, 4096}};
  sys::EventFd fake;  // any fd will do here
  const int fds[2] = {fake.get(), fake.get()};
  ASSERT_TRUE(p.frontend.set_mem_table(regions, fds));
  auto msg = p.backend.receive(1s);
  ASSERT_TRUE(msg.has_value());
  ASSERT_EQ(msg->payload.size(), 8u + 2 * 32);
  std::uint32_t n;
  std::memcpy(&n, msg->payload.data(), 4);
  EXPECT_EQ(n, 2u);
  vhost_user::MemoryRegion second;
  std::memcpy(&second, msg->payload.data() + 8 + 32, 32);
  EXPECT_EQ(second.guest_phys_addr, 1ull << 32);
  EXPECT_EQ(second.mmap_offset, 4096u);
  EXPECT_EQ(msg->fds.size(), 2u);
}

TEST(FrontendVhostUserChannel, GetRequestsWaitForTheirReply) {
  Pair p;
  std::thread peer([&] {
    auto msg = p.backend.receive(2s);
    ASSERT_TRUE(msg.has_value());
    EXPECT_EQ(msg->request, vhost_user::to_u32(Request::kGetFeatures));
    EXPECT_TRUE(msg->payload.empty());
    p.reply_u64(msg->request, 0x1234);
  });
  EXPECT_EQ(p.frontend.get_features(), 0x1234u);
  peer.join();
}

TEST(FrontendVhostUserChannel, MissingReplyTimesOut) {
  Pair p;
  p.frontend.set_reply_timeout(50ms);
  EXPECT_FALSE(p.frontend.get_features().has_value());
  EXPECT_NE(p.frontend.last_error().find("timed out"), std::string::npos)
      << p.frontend.last_error();
}

TEST(FrontendVhostUserChannel, ReplyToAnotherRequestIsAnError) {
  Pair p;
  p.reply_u64(vhost_user::to_u32(Request::kGetProtocolFeatures), 1);
  EXPECT_FALSE(p.frontend.get_features().has_value());
  EXPECT_NE(p.frontend.last_error().find("unexpected"), std::string::npos)
      << p.frontend.last_error();
}

TEST(FrontendVhostUserChannel, ReplyWithoutReplyFlagIsAnError) {
  Pair p;
  const std::uint64_t v = 1;
  ASSERT_TRUE(p.backend.send_raw(
      vhost_user::to_u32(Request::kGetFeatures), vhost_user::kVersion,
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&v), 8)));
  EXPECT_FALSE(p.frontend.get_features().has_value());
}

TEST(FrontendVhostUserChannel, ClosedPeerIsReported) {
  Pair p;
  p.backend.close();
  EXPECT_FALSE(p.frontend.get_status().has_value());
  EXPECT_TRUE(p.frontend.wait_peer_closed(100ms));
}

TEST(FrontendVhostUserChannel, ReplyAckOnlyWhereQemuAsksForIt) {
  Pair p;
  p.frontend.set_reply_ack(true);
  std::thread peer([&] {
    // SET_OWNER: no need_reply.
    auto msg = p.backend.receive(2s);
    ASSERT_TRUE(msg.has_value());
    EXPECT_EQ(msg->flags & vhost_user::kFlagNeedReply, 0u);
    // SET_MEM_TABLE: need_reply; NACK it.
    msg = p.backend.receive(2s);
    ASSERT_TRUE(msg.has_value());
    EXPECT_EQ(msg->request, vhost_user::to_u32(Request::kSetMemTable));
    EXPECT_NE(msg->flags & vhost_user::kFlagNeedReply, 0u);
    p.reply_u64(msg->request, 3);
    // NET_SET_MTU: need_reply; ACK it.
    msg = p.backend.receive(2s);
    ASSERT_TRUE(msg.has_value());
    EXPECT_NE(msg->flags & vhost_user::kFlagNeedReply, 0u);
    p.reply_u64(msg->request, 0);
  });
  EXPECT_TRUE(p.frontend.set_owner());
  EXPECT_FALSE(p.frontend.set_mem_table({}, {}));
  EXPECT_EQ(p.frontend.last_ack(), 3u);
  EXPECT_NE(p.frontend.last_error().find("NACK"), std::string::npos);
  EXPECT_TRUE(p.frontend.net_set_mtu(1500));
  peer.join();
}

TEST(FrontendVhostUserChannel, AckAllAsksEverySetRequest) {
  Pair p;
  p.frontend.set_reply_ack(true);
  p.frontend.set_ack_all(true);
  std::thread peer([&] {
    for (int i = 0; i < 2; ++i) {
      auto msg = p.backend.receive(2s);
      ASSERT_TRUE(msg.has_value());
      EXPECT_NE(msg->flags & vhost_user::kFlagNeedReply, 0u);
      p.reply_u64(msg->request, 0);
    }
  });
  EXPECT_TRUE(p.frontend.set_vring_num(0, 256));
  EXPECT_TRUE(p.frontend.set_vring_enable(0, true));
  peer.join();
}

TEST(FrontendVhostUserChannel, RawAndLyingMessages) {
  Pair p;
  const std::uint8_t junk[3] = {1, 2, 3};
  ASSERT_TRUE(p.frontend.send_raw(999, 0x7, junk));
  auto msg = p.backend.receive(1s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->request, 999u);
  EXPECT_EQ(msg->flags, 0x7u);
  EXPECT_EQ(msg->payload.size(), 3u);

  // A header announcing 8 payload bytes followed by 2: the reader must not
  // get a whole message.
  const vhost_user::Header h{vhost_user::to_u32(Request::kSetFeatures), vhost_user::kVersion, 8};
  std::vector<std::uint8_t> bytes(sizeof h + 2, 0);
  std::memcpy(bytes.data(), &h, sizeof h);
  ASSERT_TRUE(p.frontend.send_bytes(bytes));
  EXPECT_FALSE(p.backend.receive(50ms).has_value());
}

}  // namespace
}  // namespace xdpvhost::testing

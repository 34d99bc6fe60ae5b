// Framing of vhost-user messages over a real socketpair: partial messages,
// fds kept with their message, oversized payloads, replies.

#include "vhost/connection.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace xdpvhost::vhost {
namespace {

struct ConnectionTest : ::testing::Test {
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    conn = std::make_unique<Connection>(sys::UniqueFd(sv[0]));
    peer.reset(sv[1]);
  }
  void send_bytes(const void* data, std::size_t len, std::vector<int> fds = {}) {
    iovec iov{const_cast<void*>(data), len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
    if (!fds.empty()) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ASSERT_EQ(::sendmsg(peer.get(), &msg, 0), static_cast<ssize_t>(len));
  }
  std::vector<std::uint8_t> message(Request r, std::uint64_t value, std::uint32_t flags = 1) {
    std::vector<std::uint8_t> b(12 + 8);
    MessageHeader h{static_cast<std::uint32_t>(r), flags, 8};
    std::memcpy(b.data(), &h, 12);
    std::memcpy(b.data() + 12, &value, 8);
    return b;
  }
  std::unique_ptr<Connection> conn;
  sys::UniqueFd peer;
  Message m;
  std::string error;
};

TEST_F(ConnectionTest, ReassemblesAMessageSentInPieces) {
  auto b = message(Request::kSetFeatures, 0x1234);
  send_bytes(b.data(), 5);
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kWouldBlock);
  send_bytes(b.data() + 5, 10);
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kWouldBlock);
  send_bytes(b.data() + 15, b.size() - 15);
  ASSERT_EQ(conn->read(m, error), Connection::ReadStatus::kMessage) << error;
  EXPECT_EQ(m.request(), Request::kSetFeatures);
  EXPECT_EQ(m.u64(), 0x1234u);
}

TEST_F(ConnectionTest, FdsStayWithTheirMessage) {
  auto kick = message(Request::kSetVringKick, 0);
  auto feat = message(Request::kSetFeatures, 1);
  const int efd = ::eventfd(0, 0);
  send_bytes(kick.data(), kick.size(), {efd});
  send_bytes(feat.data(), feat.size());
  ::close(efd);
  ASSERT_EQ(conn->read(m, error), Connection::ReadStatus::kMessage);
  EXPECT_EQ(m.fds.size(), 1u);
  ASSERT_EQ(conn->read(m, error), Connection::ReadStatus::kMessage);
  EXPECT_EQ(m.request(), Request::kSetFeatures);
  EXPECT_TRUE(m.fds.empty());
}

TEST_F(ConnectionTest, OversizedPayloadLosesFraming) {
  MessageHeader h{5, 1, kMaxPayloadSize + 1};
  send_bytes(&h, sizeof h);
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kError);
  EXPECT_NE(error.find("payload"), std::string::npos);
}

TEST_F(ConnectionTest, WrongVersionLosesFraming) {
  auto b = message(Request::kSetFeatures, 1, /*flags=*/2);
  send_bytes(b.data(), b.size());
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kError);
}

TEST_F(ConnectionTest, TooManyFdsIsAnError) {
  auto b = message(Request::kSetMemTable, 0);
  std::vector<int> fds;
  for (int i = 0; i < 12; ++i) fds.push_back(::eventfd(0, 0));
  send_bytes(b.data(), b.size(), fds);
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kError);
}

TEST_F(ConnectionTest, PeerCloseIsReported) {
  peer.reset();
  EXPECT_EQ(conn->read(m, error), Connection::ReadStatus::kClosed);
}

TEST_F(ConnectionTest, AckIsSentOnlyWhenAskedAndNegotiated) {
  auto b = message(Request::kSetFeatures, 1, 1 | MessageHeader::kFlagNeedReply);
  send_bytes(b.data(), b.size());
  ASSERT_EQ(conn->read(m, error), Connection::ReadStatus::kMessage);
  ASSERT_TRUE(conn->reply(m, Outcome::failure("x"), /*reply_ack_negotiated=*/false, error));
  std::uint8_t buf[64];
  EXPECT_EQ(::recv(peer.get(), buf, sizeof buf, MSG_DONTWAIT), -1) << "no ack without REPLY_ACK";
  ASSERT_TRUE(conn->reply(m, Outcome::failure("x"), true, error));
  ASSERT_EQ(::recv(peer.get(), buf, sizeof buf, 0), 20);
  MessageHeader h;
  std::memcpy(&h, buf, 12);
  EXPECT_EQ(h.request, static_cast<std::uint32_t>(Request::kSetFeatures));
  EXPECT_EQ(h.flags, MessageHeader::kVersion | MessageHeader::kFlagReply);
  std::uint64_t status;
  std::memcpy(&status, buf + 12, 8);
  EXPECT_EQ(status, 1u) << "failure is non-zero";
}

TEST_F(ConnectionTest, ReplyPayloadIsSentWhateverTheFlags) {
  auto b = message(Request::kGetFeatures, 0);
  send_bytes(b.data(), b.size());
  ASSERT_EQ(conn->read(m, error), Connection::ReadStatus::kMessage);
  ASSERT_TRUE(conn->reply(m, Outcome::reply_with(std::uint64_t{42}), false, error));
  std::uint8_t buf[64];
  ASSERT_EQ(::recv(peer.get(), buf, sizeof buf, 0), 20);
  std::uint64_t v;
  std::memcpy(&v, buf + 12, 8);
  EXPECT_EQ(v, 42u);
}

}  // namespace
}  // namespace xdpvhost::vhost

// The one accept loop of every listener: connections are handed on one by
// one; the owner may stop or destroy the loop from inside admit; a failing
// accept (out of fds) rests and recovers; a paced listener rests first.

#include "sys/accept_loop.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <filesystem>
#include <optional>
#include <vector>

namespace xdpvhost::sys {
namespace {

using boost::asio::local::stream_protocol;
using namespace std::chrono_literals;

struct AcceptLoopTest : ::testing::Test {
  void SetUp() override {
    path = (std::filesystem::temp_directory_path() /
            ("xdpvhost-accept-loop-" + std::to_string(::getpid()) + ".sock"))
               .string();
    std::filesystem::remove(path);
    acceptor.emplace(io, stream_protocol::endpoint(path));
  }
  void TearDown() override {
    acceptor.reset();
    std::filesystem::remove(path);
  }
  // A client connects (the kernel completes it on the listen backlog).
  void connect() {
    clients.emplace_back(io);
    clients.back().connect(stream_protocol::endpoint(path));
  }
  template <class F>
  bool run_until(F done, std::chrono::milliseconds limit = 5s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) run_for(5ms);
    return done();
  }
  // Runs what is ready for `d` (the io_context stops when out of work: restarted).
  void run_for(std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
  }

  boost::asio::io_context io;
  std::string path;
  std::optional<stream_protocol::acceptor> acceptor;
  std::vector<stream_protocol::socket> clients;
  std::vector<stream_protocol::socket> admitted;
};

TEST_F(AcceptLoopTest, HandsEachConnectionOnAsItsOwnCloseOnExecSocket) {
  AcceptLoop<stream_protocol> loop(
      *acceptor, "test listener", 100ms,
      [&](stream_protocol::socket s) { admitted.push_back(std::move(s)); });
  loop.start();
  for (int i = 0; i < 5; ++i) connect();
  ASSERT_TRUE(run_until([&] { return admitted.size() == 5; }));
  for (auto& s : admitted) EXPECT_EQ(::fcntl(s.native_handle(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(loop.failures(), 0u);
}

TEST_F(AcceptLoopTest, TheOwnerMayStopOrDestroyTheLoopFromAdmit) {
  std::optional<AcceptLoop<stream_protocol>> loop;
  int calls = 0;
  loop.emplace(*acceptor, "test listener", 100ms, [&](stream_protocol::socket) {
    ++calls;
    loop.reset();  // a reload destroys the owner while its connection is handed on
  });
  loop->start();
  connect();
  connect();
  ASSERT_TRUE(run_until([&] { return calls == 1; }));
  run_for(50ms);
  EXPECT_EQ(calls, 1) << "nothing after the loop went";

  AcceptLoop<stream_protocol> stopping(*acceptor, "test listener", 100ms,
                                       [&](stream_protocol::socket) { ++calls; });
  stopping.start();
  ASSERT_TRUE(run_until([&] { return calls == 2; })) << "the second client is still queued";
  stopping.stop();
  connect();
  run_for(50ms);
  EXPECT_EQ(calls, 2) << "nothing after stop";
}

TEST_F(AcceptLoopTest, OutOfFdsItRestsInsteadOfSpinningAndRecovers) {
  AcceptLoop<stream_protocol> loop(
      *acceptor, "test listener", 20ms,
      [&](stream_protocol::socket s) { admitted.push_back(std::move(s)); });
  // One connection first: every path of the loop has run once before fds
  // run out (a sanitizer's first check of a type needs an fd of its own).
  loop.start();
  connect();
  ASSERT_TRUE(run_until([&] { return admitted.size() == 1; }));
  loop.stop();
  connect();  // queued: nobody accepts it while the loop is stopped
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // No fd left for accept: the lowest free fd is the new limit.
  const int lowest = ::dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  loop.start();
  const bool failed = run_until([&] { return loop.failures() >= 3; }, 2s);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(failed) << "accept failed " << loop.failures() << " times";
  EXPECT_EQ(admitted.size(), 1u);
  // The fds are back: the next try after a rest of 20 ms takes the client.
  ASSERT_TRUE(run_until([&] { return admitted.size() == 2; }));
  const std::uint64_t failures = loop.failures();
  run_until([] { return false; }, 100ms);
  EXPECT_EQ(loop.failures(), failures) << "no failure once fds are back";
}

TEST_F(AcceptLoopTest, APacedListenerRestsAsLongAsItsPaceSays) {
  int asked = 0;
  AcceptLoop<stream_protocol> loop(
      *acceptor, "test listener", 100ms,
      [&](stream_protocol::socket s) { admitted.push_back(std::move(s)); },
      [&]() -> std::chrono::nanoseconds { return ++asked == 1 ? 30ms : 0ms; });
  connect();
  const auto start = std::chrono::steady_clock::now();
  loop.start();
  ASSERT_TRUE(run_until([&] { return admitted.size() == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(loop.paced(), 1u);
}

}  // namespace
}  // namespace xdpvhost::sys

// ControlServer's lifetime against the io_context it runs on: a completion
// that was already queued when the server went (a reload destroys it and
// makes a new one within one pass of the io_context) must find nothing of it;
// thousands of clients closed for idling leave nothing behind.

#include "control/control_server.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sys/resource_ledger.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::daemon {
namespace {

sys::UniqueFd connect_to(const std::string& path) {
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

// A socket directory of its own, and the options of a server in it.
class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xvctl-server-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.path = dir_ + "/control.sock";
    options_.mode = 0600;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  ControlServer::Options options_;
  boost::asio::io_context io_;
};

// Two clients wait in the backlog. The accept handler of the first starts
// the next accept, which Asio tries at once and finds the second client: its
// successful completion is queued. The server goes before that completion
// runs (as a reload would), and the completion must then touch nothing of it
// (under ASan a handler that used `this` is a heap-use-after-free).
TEST_F(ControlServerTest, AnAcceptCompletedAsTheServerGoesIsDropped) {
  boost::asio::io_context& io = io_;
  const ControlServer::Options& options = options_;
  auto server = std::make_unique<ControlServer>(
      io, options, [](std::string_view) { return std::string("{}"); },
      [] { return std::string("{}"); });
  std::string error;
  ASSERT_TRUE(server->start(error)) << error;
  io.poll();  // the accept waits in the reactor
  io.restart();
  sys::UniqueFd first = connect_to(options.path);
  sys::UniqueFd second = connect_to(options.path);
  ASSERT_TRUE(first.valid() && second.valid());
  ASSERT_EQ(io.poll_one(), 1u);  // the first is admitted; the second's accept is queued
  EXPECT_EQ(server->clients(), 1u);
  server.reset();
  io.restart();
  io.poll();  // the second's completion runs after its server went
}

// Every client that goes quiet is closed after idle_timeout, its timer and
// session with it: for months, the liveness probe's and every operator's
// forgotten connections. 2400 clients in batches of 16 (one of each batch
// asks something first) leave no fd, mapping or thread behind.
TEST_F(ControlServerTest, ThousandsOfClientsClosedForIdlingLeaveNothing) {
  boost::asio::io_context& io = io_;
  ControlServer::Options& options = options_;
  options.idle_timeout = std::chrono::milliseconds(2);
  ControlServer server(
      io, options, [](std::string_view) { return std::string(R"({"result":1})"); },
      [] { return std::string("{}"); });
  std::string error;
  ASSERT_TRUE(server.start(error)) << error;
  io.poll();
  io.restart();
  auto run_until_idle = [&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      io.run_for(std::chrono::milliseconds(5));
      io.restart();
    } while (server.clients() != 0 && std::chrono::steady_clock::now() < give_up);
    return server.clients() == 0;
  };
  // One batch first: what the first accepts and timers allocate for good.
  const auto batch = [&](int round) {
    std::vector<sys::UniqueFd> clients;
    for (int i = 0; i < 16; ++i) clients.push_back(connect_to(options.path));
    for (const auto& c : clients) ASSERT_TRUE(c.valid()) << round;
    ASSERT_EQ(::write(clients[0].get(), "{}\n", 3), 3);
    ASSERT_TRUE(run_until_idle()) << round << ": " << server.clients() << " still open";
    char reply[64];
    EXPECT_GT(::read(clients[0].get(), reply, sizeof reply), 0) << round << ": no reply";
  };
  batch(-1);
  const sys::ResourceLedger before = sys::take_resource_ledger();
  for (int round = 0; round < 150; ++round) {
    batch(round);
    if (HasFatalFailure()) break;
  }
  const sys::ResourceLedger after = sys::take_resource_ledger();
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
}

}  // namespace
}  // namespace xdpvhost::daemon

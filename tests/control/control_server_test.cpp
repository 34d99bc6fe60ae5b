// ControlServer's lifetime against the io_context it runs on: a completion
// that was already queued when the server went (a reload destroys it and
// makes a new one within one pass of the io_context) must find nothing of it.

#include "control/control_server.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

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

// Two clients wait in the backlog. The accept handler of the first starts
// the next accept, which Asio tries at once and finds the second client: its
// successful completion is queued. The server goes before that completion
// runs (as a reload would), and the completion must then touch nothing of it
// (under ASan a handler that used `this` is a heap-use-after-free).
TEST(ControlServer, AnAcceptCompletedAsTheServerGoesIsDropped) {
  char tmpl[] = "/tmp/xvctl-server-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  boost::asio::io_context io;
  ControlServer::Options options;
  options.path = dir + "/control.sock";
  options.mode = 0600;
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
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xdpvhost::daemon

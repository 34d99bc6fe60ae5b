// The metrics listener's HTTP server over real loopback TCP connections.

#include "http_server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <thread>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::daemon::metrics {
namespace {

using namespace std::chrono_literals;

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServer::Options options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(io_, options, [this](const HttpRequest& r) {
      ++handled_;
      HttpResponse response;
      if (r.path == "/missing") {
        response.status = 404;
        response.body = "no\n";
      } else if (r.path == "/big") {
        // More than loopback's socket buffers hold: the reply stays being
        // written while its client does not read.
        response.body.assign(std::size_t{32} << 20, 'x');
      } else {
        response.body = "path=" + r.path + "\n";
      }
      return response;
    });
    std::string error;
    ASSERT_TRUE(server_->start(error)) << error;
    port_ = server_->bound_port();
    ASSERT_NE(port_, 0);
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (thread_.joinable()) {
      boost::asio::post(io_, [this] { server_->stop(); });
      work_.reset();
      io_.stop();
      thread_.join();
    }
  }

  // From `source` (any 127.0.0.0/8 address is this machine's loopback: a
  // client address of its own, as another pod would have).
  sys::UniqueFd connect(const char* source = "127.0.0.1") {
    sys::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, source, &from.sin_addr), 1);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from), 0) << source;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }

  static void send_all(int fd, const std::string& data) {
    ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }

  // Reads until `count` complete responses arrived (Content-Length framed)
  // or EOF / 10 s without data. Returns the raw bytes.
  static std::string read_responses(int fd, int count, bool* eof = nullptr) {
    std::string data;
    for (;;) {
      int complete = 0;
      std::size_t pos = 0;
      while (true) {
        const std::size_t end = data.find("\r\n\r\n", pos);
        if (end == std::string::npos) break;
        const std::size_t cl = data.find("Content-Length: ", pos);
        if (cl == std::string::npos || cl > end) break;
        const std::size_t length = std::stoul(data.substr(cl + 16));
        if (data.size() < end + 4 + length) break;
        pos = end + 4 + length;
        ++complete;
      }
      if (complete >= count) return data;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) return data;
      char buf[65536];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        if (eof) *eof = true;
        return data;
      }
      data.append(buf, static_cast<std::size_t>(n));
    }
  }

  // A request on `fd`, answered.
  static bool served(int fd, const std::string& path) {
    send_all(fd, "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
    return read_responses(fd, 1).find("path=" + path) != std::string::npos;
  }

  // `f()` on the server's thread (its counters are that thread's).
  template <typename F>
  auto on_server(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }

  // True once the server closed `fd` (EOF), waiting up to 10 s.
  static bool closed_by_server(int fd) {
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return true;
    }
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::unique_ptr<HttpServer> server_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> handled_{0};
};

TEST_F(HttpServerTest, GetAndHeadAndKeepAlive) {
  start();
  auto fd = connect();
  send_all(fd.get(), "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string r = read_responses(fd.get(), 1);
  EXPECT_EQ(r,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n"
            "Connection: keep-alive\r\n\r\npath=/metrics\n");
  // Same connection: HEAD has the length of the GET body, no body.
  send_all(fd.get(), "HEAD /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  bool eof = false;
  r = read_responses(fd.get(), 99, &eof);
  EXPECT_TRUE(eof);
  EXPECT_EQ(r,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\n"
            "Connection: close\r\n\r\n");
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
  start();
  auto fd = connect();
  send_all(fd.get(),
           "GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n\r\n"
           "GET /c HTTP/1.0\r\n\r\n");
  bool eof = false;
  const std::string r = read_responses(fd.get(), 99, &eof);
  EXPECT_TRUE(eof);  // HTTP/1.0 without keep-alive: closed after the third
  const auto a = r.find("path=/a");
  const auto missing = r.find("404 Not Found");
  const auto c = r.find("path=/c");
  ASSERT_NE(a, std::string::npos) << r;
  ASSERT_NE(missing, std::string::npos) << r;
  ASSERT_NE(c, std::string::npos) << r;
  EXPECT_LT(a, missing);
  EXPECT_LT(missing, c);
}

TEST_F(HttpServerTest, MethodNotAllowedAndBadRequests) {
  start();
  {
    auto fd = connect();
    send_all(fd.get(), "POST /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    const std::string r = read_responses(fd.get(), 1);
    EXPECT_NE(r.find("HTTP/1.1 405 Method Not Allowed\r\n"), std::string::npos) << r;
    EXPECT_NE(r.find("Allow: GET, HEAD\r\n"), std::string::npos) << r;
  }
  {
    auto fd = connect();
    send_all(fd.get(), "garbage\r\n\r\n");
    bool eof = false;
    const std::string r = read_responses(fd.get(), 99, &eof);
    EXPECT_EQ(r.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << r;
    EXPECT_NE(r.find("Connection: close"), std::string::npos);
    EXPECT_TRUE(eof);
  }
  {
    auto fd = connect();
    send_all(fd.get(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
    const std::string r = read_responses(fd.get(), 99);
    EXPECT_EQ(r.rfind("HTTP/1.1 413 ", 0), 0u) << r;
  }
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpServerTest, OversizeHeadIs431AndClosed) {
  HttpServer::Options o;
  o.max_head_bytes = 1024;
  start(o);
  auto fd = connect();
  send_all(fd.get(), "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4000, 'x'));
  bool eof = false;
  const std::string r = read_responses(fd.get(), 99, &eof);
  EXPECT_EQ(r.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << r;
  EXPECT_TRUE(eof);
}

TEST_F(HttpServerTest, StalledClientDoesNotDelayOthersAndIsClosedAtItsDeadline) {
  HttpServer::Options o;
  o.request_timeout = 300ms;
  start(o);
  auto stalled = connect();
  send_all(stalled.get(), "GET /metrics HTTP/1.1\r\nHo");  // and nothing more
  auto silent = connect();                                 // sends nothing at all
  for (int i = 0; i < 5; ++i) {
    auto fd = connect();
    send_all(fd.get(), "GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    const std::string r = read_responses(fd.get(), 1);
    EXPECT_NE(r.find("path=/ok"), std::string::npos);
  }
  EXPECT_TRUE(closed_by_server(stalled.get()));
  EXPECT_TRUE(closed_by_server(silent.get()));
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServer::Options o;
  o.idle_timeout = 200ms;
  start(o);
  auto fd = connect();
  send_all(fd.get(), "GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(read_responses(fd.get(), 1).find("path=/a"), std::string::npos);
  EXPECT_TRUE(closed_by_server(fd.get()));
}

// Every connection busy writing a reply: nothing can give way, and the
// newcomer is told why.
TEST_F(HttpServerTest, ATableOfConnectionsWritingRepliesAnswers503) {
  HttpServer::Options o;
  o.max_connections = 2;
  start(o);
  auto a = connect();
  auto b = connect();
  for (auto* fd : {&a, &b}) {
    send_all(fd->get(), "GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    char head[16];
    ASSERT_EQ(::recv(fd->get(), head, sizeof head, MSG_WAITALL), 16);  // the reply has begun
  }
  auto c = connect();
  bool eof = false;
  const std::string r = read_responses(c.get(), 99, &eof);
  EXPECT_EQ(r.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << r;
  EXPECT_TRUE(eof);
  EXPECT_EQ(on_server([this] { return server_->refused(); }), 1u);
  // A freed slot is usable again.
  a.reset();
  bool ok = false;
  for (int attempt = 0; attempt < 100 && !ok; ++attempt) {
    auto d = connect();
    ok = served(d.get(), "/y");
    if (!ok) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(ok);
}

// One client address holds at most max_per_client connections: at its share,
// its own connection that waited longest gives way, nobody else's.
TEST_F(HttpServerTest, AClientAtItsShareGivesUpItsOwnLongestWaitingConnection) {
  HttpServer::Options o;
  o.max_connections = 8;
  o.max_per_client = 2;
  start(o);
  auto other = connect("127.0.0.9");
  ASSERT_TRUE(served(other.get(), "/other"));
  auto a = connect();
  ASSERT_TRUE(served(a.get(), "/a"));
  auto b = connect();
  ASSERT_TRUE(served(b.get(), "/b"));
  auto c = connect();
  ASSERT_TRUE(served(c.get(), "/c"));
  EXPECT_TRUE(closed_by_server(a.get()));
  EXPECT_TRUE(served(b.get(), "/b2"));
  EXPECT_TRUE(served(other.get(), "/other2"));
  EXPECT_EQ(on_server([this] { return server_->evicted(); }), 1u);
  EXPECT_EQ(on_server([this] { return server_->connections(); }), 3u);
}

// The slot attack: other clients take the whole table with connections that
// are idle or send half a head. A newcomer (a readiness probe, a scrape) is
// served, and the connection that waited longest for its client gives way.
TEST_F(HttpServerTest, AFullTableGivesUpItsLongestWaitingConnectionNotTheNewcomer) {
  HttpServer::Options o;
  o.max_connections = 4;
  o.max_per_client = 2;
  start(o);
  std::vector<sys::UniqueFd> held;
  for (const char* source : {"127.0.0.2", "127.0.0.3"}) {
    held.push_back(connect(source));
    ASSERT_TRUE(served(held.back().get(), "/idle"));
    held.push_back(connect(source));
    send_all(held.back().get(), "GET /slow HTTP/1.1\r\nHo");
  }
  std::vector<sys::UniqueFd> probes;
  for (const char* source : {"127.0.0.1", "127.0.0.4", "127.0.0.5"}) {
    probes.push_back(connect(source));
    EXPECT_TRUE(served(probes.back().get(), "/ready")) << source;
  }
  // Each probe (kept open) pushed out the connection that had waited
  // longest: the idle one and the half head from .2, the idle one from .3.
  EXPECT_TRUE(closed_by_server(held[0].get()));
  EXPECT_TRUE(closed_by_server(held[1].get()));
  EXPECT_TRUE(closed_by_server(held[2].get()));
  EXPECT_TRUE(served(probes[0].get(), "/again"));
  EXPECT_EQ(on_server([this] { return server_->evicted(); }), 3u);
  EXPECT_EQ(on_server([this] { return server_->refused(); }), 0u);
}

// Once three quarters of the table are taken, a connection whose reply has
// been written may idle only idle_timeout_under_pressure; the ones given
// their time before keep it.
TEST_F(HttpServerTest, KeepAliveIsShorterUnderPressure) {
  HttpServer::Options o;
  o.max_connections = 4;
  o.idle_timeout = 60s;
  o.idle_timeout_under_pressure = 200ms;
  start(o);
  auto a = connect();
  ASSERT_TRUE(served(a.get(), "/a"));
  auto b = connect("127.0.0.2");
  ASSERT_TRUE(served(b.get(), "/b"));
  auto c = connect("127.0.0.3");
  ASSERT_TRUE(served(c.get(), "/c"));
  EXPECT_TRUE(closed_by_server(c.get()));
  EXPECT_TRUE(served(a.get(), "/a2"));
}

TEST_F(HttpServerTest, StopClosesEveryConnection) {
  start();
  auto fd = connect();
  send_all(fd.get(), "GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(read_responses(fd.get(), 1).find("path=/a"), std::string::npos);
  std::promise<void> stopped;
  boost::asio::post(io_, [&] {
    server_->stop();
    stopped.set_value();
  });
  stopped.get_future().wait();
  EXPECT_TRUE(closed_by_server(fd.get()));
  EXPECT_EQ(server_->bound_port(), 0);
}

// Two clients wait in the backlog. The accept handler of the first starts
// the next accept, which Asio tries at once and finds the second client: its
// successful completion is queued. The server goes before that completion
// runs (as a reload would), and the completion must then touch nothing of it
// (under ASan a handler that used `this` is a heap-use-after-free).
TEST(HttpServerLifetime, AnAcceptCompletedAsTheServerGoesIsDropped) {
  boost::asio::io_context io;
  HttpServer::Options o;
  o.host = "127.0.0.1";
  auto server =
      std::make_unique<HttpServer>(io, o, [](const HttpRequest&) { return HttpResponse{}; });
  std::string error;
  ASSERT_TRUE(server->start(error)) << error;
  io.poll();  // the accept waits in the reactor
  io.restart();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server->bound_port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sys::UniqueFd first(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sys::UniqueFd second(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(first.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::connect(second.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(io.poll_one(), 1u);  // the first is admitted; the second's accept is queued
  EXPECT_EQ(server->connections(), 1u);
  server.reset();
  io.restart();
  io.poll();  // the second's completion runs after its server went
}

TEST(HttpServerIpv6, ListensOnLoopbackV6) {
  boost::asio::io_context io;
  HttpServer::Options o;
  o.host = "::1";
  HttpServer server(io, o, [](const HttpRequest&) { return HttpResponse{}; });
  std::string error;
  if (!server.start(error)) GTEST_SKIP() << "no IPv6 loopback here: " << error;
  EXPECT_NE(server.bound_port(), 0);
}

TEST(HttpServerStart, UnusableAddressIsAnError) {
  boost::asio::io_context io;
  HttpServer::Options o;
  o.host = "192.0.2.1";  // TEST-NET-1: not an address of this machine
  o.port = 19499;
  HttpServer server(io, o, [](const HttpRequest&) { return HttpResponse{}; });
  std::string error;
  EXPECT_FALSE(server.start(error));
  EXPECT_NE(error.find("metrics listener"), std::string::npos) << error;
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics

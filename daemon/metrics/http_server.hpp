#pragma once
// A small HTTP/1.1 server on the control thread's io_context, enough for a
// Prometheus scrape and a readiness probe: GET and HEAD, no request bodies,
// keep-alive and pipelined requests answered in order. Requests are parsed
// by Boost.Beast's request_parser (http_request.hpp), responses written by
// Beast's serializer; the sockets, timers and connection limit are our own,
// on the one io_context (no threads). Every connection is served
// asynchronously on its own, so a slow or stalled client delays nobody else;
// it is closed when its request head is not complete within
// request_timeout, when it stays idle between requests for idle_timeout
// (idle_timeout_under_pressure once three quarters of max_connections are
// taken), or when a reply cannot be written within request_timeout. Request
// heads are limited to max_head_bytes (431).
//
// The listener is reachable by every pod of the node (hostNetwork), so no
// client can take the connection table: one client address holds at most
// max_per_client connections, and a newcomer that finds its address's share
// or the table full closes the connection that has waited longest for its
// client (idle, or a head still incomplete) instead of being refused. Only
// when every connection is busy writing a reply is the newcomer answered
// 503. Connections are accepted by the one accept loop (sys::AcceptLoop:
// when accept() fails it rests for 100 ms instead of spinning).

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "http_request.hpp"
#include "sys/accept_loop.hpp"

namespace xdpvhost::daemon::metrics {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra header fields
};

class HttpServer {
 public:
  struct Options {
    std::string host;
    std::uint16_t port = 0;  // 0: any free port (tests)
    std::size_t max_connections = 32;
    std::size_t max_per_client = 8;  // connections from one client address
    std::size_t max_head_bytes = 8192;
    std::chrono::milliseconds request_timeout{10000};
    std::chrono::milliseconds idle_timeout{5000};
    std::chrono::milliseconds idle_timeout_under_pressure{1000};
  };
  // Answers a complete, well-formed request (GET or HEAD: the server drops
  // the body for HEAD itself).
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  HttpServer(boost::asio::io_context& io, Options options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Resolves the host, binds (IPv6 addresses v6-only), listens.
  bool start(std::string& error);
  // Closes the listener and every connection.
  void stop();

  std::uint16_t bound_port() const;
  std::size_t connections() const noexcept { return sessions_.size(); }
  // Connections closed to make room for a newcomer, and newcomers refused.
  std::uint64_t evicted() const noexcept { return evicted_; }
  std::uint64_t refused() const noexcept { return refused_; }

 private:
  class Session;
  void admit(boost::asio::ip::tcp::socket socket);
  // Makes room for a connection from `peer`; false: none can be made.
  bool make_room(const boost::asio::ip::address& peer);
  // The connection that has waited longest for its client, of `peer`'s or
  // (nullptr) of all; nullptr when every one is writing a reply.
  std::shared_ptr<Session> longest_waiting(const boost::asio::ip::address* peer) const;
  std::chrono::milliseconds idle_timeout() const;
  void close(const std::shared_ptr<Session>& session);

  boost::asio::io_context& io_;
  Options options_;
  Handler handler_;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor_;
  std::optional<sys::AcceptLoop<boost::asio::ip::tcp>> accept_loop_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::uint64_t evicted_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace xdpvhost::daemon::metrics

#include "http_server.hpp"

#include <spdlog/spdlog.h>

#include "sys/log_rate.hpp"

#include <array>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace xdpvhost::daemon::metrics {

using boost::asio::ip::tcp;

namespace {

namespace http = boost::beast::http;

using Response = http::response<http::string_body>;

HttpResponse error_response(int status, const std::string& why) {
  HttpResponse r;
  r.status = status;
  r.body = why + "\n";
  return r;
}

// `response` as Beast writes it: status line (Beast's reason phrase),
// Content-Type, Content-Length, the extra fields, Connection. For HEAD the
// body is left out and its length kept.
Response to_message(HttpResponse response, bool keep_alive, bool head_only) {
  Response m{static_cast<http::status>(response.status), 11};
  m.set(http::field::content_type, response.content_type);
  m.content_length(response.body.size());
  for (const auto& [name, value] : response.headers) m.insert(name, value);
  m.set(http::field::connection, keep_alive ? "keep-alive" : "close");
  if (!head_only) m.body() = std::move(response.body);
  return m;
}

}  // namespace

class HttpServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer& server, tcp::socket socket, boost::asio::ip::address peer)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        peer_(std::move(peer)) {}

  void start() {
    waiting_since_ = std::chrono::steady_clock::now();
    timer_.expires_after(server_.options_.request_timeout);
    watch_deadline();
    read();
  }

  const boost::asio::ip::address& peer() const noexcept { return peer_; }
  // Since when it waits for its client: accepted, or its last reply written.
  std::chrono::steady_clock::time_point waiting_since() const noexcept { return waiting_since_; }
  bool writing() const noexcept { return writing_; }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void watch_deadline() {
    auto self = shared_from_this();
    timer_.async_wait([this, self](const boost::system::error_code&) {
      if (closed_) return;
      if (timer_.expiry() <= std::chrono::steady_clock::now()) {
        server_.close(self);
        return;
      }
      watch_deadline();
    });
  }

  void read() {
    auto self = shared_from_this();
    socket_.async_read_some(boost::asio::buffer(chunk_),
                            [this, self](const boost::system::error_code& ec, std::size_t n) {
                              if (closed_) return;
                              if (ec) {
                                server_.close(self);
                                return;
                              }
                              if (buffer_.empty())
                                timer_.expires_after(server_.options_.request_timeout);
                              buffer_.append(chunk_.data(), n);
                              next();
                            });
  }

  // Answers the next request in buffer_, or reads more.
  void next() {
    HttpRequest request;
    const HttpParse parse = parse_http_request(buffer_, server_.options_.max_head_bytes, request);
    if (parse.status == HttpParse::Status::kIncomplete) {
      read();
      return;
    }
    if (parse.status == HttpParse::Status::kBad) {
      buffer_.clear();
      respond(error_response(parse.error_status, parse.error), false, false);
      return;
    }
    buffer_.erase(0, parse.consumed);
    HttpResponse response;
    if (request.method != "GET" && request.method != "HEAD") {
      response = error_response(405, "only GET and HEAD");
      response.headers.emplace_back("Allow", "GET, HEAD");
    } else {
      response = server_.handler_(request);
    }
    respond(std::move(response), request.keep_alive, request.method == "HEAD");
  }

  void respond(HttpResponse response, bool keep_alive, bool head_only) {
    response_ = to_message(std::move(response), keep_alive, head_only);
    timer_.expires_after(server_.options_.request_timeout);
    writing_ = true;
    auto self = shared_from_this();
    http::async_write(socket_, response_,
                      [this, self, keep_alive](const boost::system::error_code& ec, std::size_t) {
                        if (closed_) return;
                        writing_ = false;
                        if (ec || !keep_alive) {
                          server_.close(self);
                          return;
                        }
                        waiting_since_ = std::chrono::steady_clock::now();
                        timer_.expires_after(buffer_.empty() ? server_.idle_timeout()
                                                             : server_.options_.request_timeout);
                        next();
                      });
  }

  HttpServer& server_;
  tcp::socket socket_;
  boost::asio::steady_timer timer_;
  std::array<char, 4096> chunk_{};
  std::string buffer_;
  Response response_;  // being written
  boost::asio::ip::address peer_;
  std::chrono::steady_clock::time_point waiting_since_;
  bool writing_ = false;
  bool closed_ = false;
};

HttpServer::HttpServer(boost::asio::io_context& io, Options options, Handler handler)
    : io_(io), options_(std::move(options)), handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  stop();
}

bool HttpServer::start(std::string& error) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(options_.host, std::to_string(options_.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    error = "metrics listener: cannot resolve " + options_.host + ": " + ec.message();
    return false;
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.emplace(io_);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec && endpoint.address().is_v6()) acceptor_->set_option(boost::asio::ip::v6_only(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error = "metrics listener " + options_.host + ":" + std::to_string(options_.port) + ": " +
            ec.message();
    acceptor_.reset();
    return false;
  }
  accept_loop_.emplace(*acceptor_, "metrics listener", std::chrono::milliseconds(100),
                       [this](tcp::socket socket) { admit(std::move(socket)); });
  accept_loop_->start();
  return true;
}

void HttpServer::stop() {
  accept_loop_.reset();
  if (acceptor_) {
    boost::system::error_code ignored;
    acceptor_->close(ignored);
    acceptor_.reset();
  }
  for (const auto& s : sessions_) s->close();
  sessions_.clear();
}

std::uint16_t HttpServer::bound_port() const {
  if (!acceptor_) return 0;
  boost::system::error_code ec;
  const auto endpoint = acceptor_->local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void HttpServer::admit(tcp::socket socket) {
  boost::system::error_code peer_error;
  const auto peer = socket.remote_endpoint(peer_error).address();
  if (peer_error) return;  // gone already (reset before we got to it): nothing to serve
  if (!make_room(peer)) {
    // Best effort, never blocking: the client learns why and is closed.
    ++refused_;
    static const Response busy =
        to_message(error_response(503, "too many connections"), false, false);
    boost::system::error_code ignored;
    socket.non_blocking(true, ignored);
    http::write(socket, busy, ignored);
    socket.close(ignored);
    return;
  }
  auto session = std::make_shared<Session>(*this, std::move(socket), peer);
  sessions_.insert(session);
  session->start();
}

bool HttpServer::make_room(const boost::asio::ip::address& peer) {
  std::size_t from_peer = 0;
  for (const auto& s : sessions_) from_peer += s->peer() == peer ? 1 : 0;
  const boost::asio::ip::address* scope = nullptr;  // whose connection gives way
  if (from_peer >= options_.max_per_client) {
    scope = &peer;
  } else if (sessions_.size() < options_.max_connections) {
    return true;
  }
  const std::shared_ptr<Session> victim = longest_waiting(scope);
  if (!victim) return false;
  ++evicted_;
  if (sys::worth_logging(evicted_)) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - victim->waiting_since());
    spdlog::info(
        "metrics listener: {} connections, {} from {}: closed one from {} that waited {} ms "
        "for its client, for a new one (#{})",
        sessions_.size(), from_peer, peer.to_string(), victim->peer().to_string(), waited.count(),
        evicted_);
  }
  close(victim);
  return true;
}

std::shared_ptr<HttpServer::Session> HttpServer::longest_waiting(
    const boost::asio::ip::address* peer) const {
  std::shared_ptr<Session> longest;
  for (const auto& s : sessions_) {
    if (s->writing() || (peer != nullptr && s->peer() != *peer)) continue;
    if (!longest || s->waiting_since() < longest->waiting_since()) longest = s;
  }
  return longest;
}

std::chrono::milliseconds HttpServer::idle_timeout() const {
  const bool under_pressure = sessions_.size() * 4 >= options_.max_connections * 3;
  return under_pressure ? options_.idle_timeout_under_pressure : options_.idle_timeout;
}

void HttpServer::close(const std::shared_ptr<Session>& session) {
  session->close();
  sessions_.erase(session);
}

}  // namespace xdpvhost::daemon::metrics

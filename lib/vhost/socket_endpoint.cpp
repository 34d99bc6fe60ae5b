#include "vhost/socket_endpoint.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sys/fd_kind.hpp"
#include "sys/log_rate.hpp"
#include "sys/unix_socket_path.hpp"
#include "vhost/message_table.hpp"

namespace xdpvhost::vhost {

namespace {

bool any_ring_running(const Device& device) noexcept {
  for (std::uint32_t i = 0; i < device.vring_count(); ++i)
    if (device.vrings()[i].running) return true;
  return false;
}

}  // namespace

SocketEndpoint::SocketEndpoint(boost::asio::io_context& io, Options options, Device& device,
                               StateCallback on_state)
    : io_(io),
      options_(std::move(options)),
      device_(device),
      on_state_(std::move(on_state)),
      listener_(io),
      reconnect_timer_(io),
      throttle_timer_(io),
      budget_(options_.budget, sys::CpuBudget::Clock::now()),
      reconnect_delay_(options_.reconnect_interval) {}

SocketEndpoint::~SocketEndpoint() {
  stop();
}

void SocketEndpoint::set_state(State s) {
  if (state_ == s) return;
  state_ = s;
  if (on_state_) on_state_(s);
}

bool SocketEndpoint::start(std::string& error) {
  sockaddr_un addr;
  if (!sys::unix_socket_address(options_.path, addr, error)) return false;
  const std::vector<std::string> roots = sys::port_socket_dirs();
  if (std::string problem = sys::check_normal_path(options_.path); !problem.empty()) {
    error = options_.path + " " + problem;
    return false;
  }
  if (!sys::socket_root_of(options_.path, roots)) {
    error = options_.path + " is not below any of socket_dirs";
    return false;
  }
  stopping_ = false;
  if (options_.mode == Mode::kClient) {
    set_state(State::kWaiting);
    try_connect();
    return true;
  }
  sys::UnixListenOptions listen;
  listen.mode = options_.socket_mode;
  listen.backlog = 4;
  listen.roots = roots;
  if (!listener_.open(options_.path, listen, error)) return false;
  // Connections accepted or turned away are charged to the port: a
  // connect-and-close flood on one port's socket holds up nobody else.
  accept_loop_.emplace(
      listener_.acceptor(), "port " + options_.name, options_.accept_backoff,
      [this](boost::asio::local::stream_protocol::socket socket) { admit(std::move(socket)); },
      [this] {
        const auto wait = budget_.wait(sys::CpuBudget::Clock::now());
        if (wait.count() > 0) ++counters_.throttled;
        return wait;
      });
  set_state(State::kWaiting);
  accept_loop_->start();
  return true;
}

void SocketEndpoint::stop() {
  stopping_ = true;
  reconnect_timer_.cancel();
  throttle_timer_.cancel();
  if (connection_) close_connection("endpoint stopped");
  accept_loop_.reset();
  listener_.close();
  set_state(State::kStopped);
}

void SocketEndpoint::admit(boost::asio::local::stream_protocol::socket socket) {
  const sys::TurnCharge charge{budget_};
  boost::system::error_code ec;
  sys::UniqueFd fd(socket.release(ec));
  if (ec) return;  // not open: nothing to serve
  if (connection_) {
    // vhost-user is one frontend per socket; a second one is turned away.
    ++counters_.rejected_connections;
    if (sys::worth_logging(counters_.rejected_connections))
      spdlog::warn("port {}: second frontend connection on {} refused (#{})", options_.name,
                   options_.path, counters_.rejected_connections);
    return;
  }
  if (!sys::set_nonblocking(fd.get())) {
    spdlog::warn("port {}: a frontend connection on {} cannot be made non-blocking: {}",
                 options_.name, options_.path, std::strerror(errno));
    return;
  }
  attach(std::move(fd));
}

void SocketEndpoint::try_connect() {
  if (stopping_) return;
  sys::UnixConnectResult r = sys::connect_unix(options_.path, sys::port_socket_dirs());
  if (r.fd.valid()) {
    last_connect_error_.clear();
    // Who is at the other end: logged with the connection (the frontend's
    // socket is in a directory its owner can write), at the rate attach()
    // logs it.
    if (auto peer = sys::peer_credentials(r.fd.get());
        peer && sys::worth_logging(counters_.connections + 1))
      spdlog::info("port {}: connected to {}: peer pid {} uid {} gid {}", options_.name,
                   options_.path, peer->pid, peer->uid, peer->gid);
    attach(std::move(r.fd));
    return;
  }
  if (r.refused) {
    ++counters_.refused_paths;
    if (r.error != last_connect_error_ || sys::worth_logging(counters_.refused_paths))
      spdlog::warn("port {}: not connecting: {} (#{})", options_.name, r.error,
                   counters_.refused_paths);
  } else if (r.error != last_connect_error_) {
    spdlog::debug("port {}: cannot connect yet: {}", options_.name, r.error);
  }
  last_connect_error_ = r.error;
  schedule_reconnect();
}

void SocketEndpoint::schedule_reconnect() {
  if (stopping_ || options_.mode != Mode::kClient) return;
  std::weak_ptr<int> alive = alive_;
  reconnect_timer_.expires_after(reconnect_delay_);
  reconnect_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    try_connect();
  });
}

void SocketEndpoint::attach(sys::UniqueFd fd) {
  const int raw = fd.get();
  connection_ = std::make_unique<Connection>(std::move(fd));
  ++connections_;
  connection_wait_.emplace(io_, raw);
  ++counters_.connections;
  if (sys::worth_logging(counters_.connections))
    spdlog::info("port {}: frontend connected on {} (#{})", options_.name, options_.path,
                 counters_.connections);
  set_state(State::kConnected);
  wait_readable();
}

void SocketEndpoint::wait_readable() {
  std::weak_ptr<int> alive = alive_;
  connection_wait_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                               [this, alive](const boost::system::error_code& ec) {
                                 if (ec || alive.expired() || !connection_) return;
                                 on_readable();
                               });
}

void SocketEndpoint::on_readable() {
  if (const auto wait = budget_.wait(sys::CpuBudget::Clock::now()); wait.count() > 0) {
    throttle(wait);
    return;
  }
  // What this turn costs the control thread is charged to the frontend,
  // however the turn ends.
  const sys::TurnCharge charge{budget_};
  Message message;
  // A frontend streaming messages gets kMessagesPerTurn of them, then the
  // io_context serves everyone else (other frontends, the control socket,
  // metrics) before this connection is read again.
  for (unsigned handled = 0;; ++handled) {
    if (handled == kMessagesPerTurn) {
      boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), turn = connections_] {
        // The same connection still (not closed, nor replaced meanwhile).
        if (!alive.expired() && connection_ && turn == connections_) on_readable();
      });
      return;
    }
    std::string error;
    const auto status = connection_->read(message, error);
    if (status == Connection::ReadStatus::kWouldBlock) break;
    if (status == Connection::ReadStatus::kClosed) {
      close_connection("frontend closed the connection");
      return;
    }
    if (status == Connection::ReadStatus::kError) {
      close_connection(error);
      return;
    }
    ++counters_.messages;
    spdlog::debug("port {}: {} size {}", options_.name, request_name(message.header.request),
                  message.header.size);
    // REPLY_ACK as negotiated when the frontend sent the message (RESET_OWNER
    // forgets it, yet the frontend that asked waits for its ack).
    const bool ack = device_.reply_ack_negotiated();
    Outcome outcome = device_.handle(message);
    last_request_ = message.header.request;
    if (!session_ran_) session_ran_ = any_ring_running(device_);
    if (!outcome.ok) {
      ++counters_.failed_messages;
      log_failure(outcome.error);
    }
    if (outcome.disconnect) {  // no reply: the frontend learns it from the closed connection
      close_connection(outcome.error);
      return;
    }
    if (!connection_->reply(message, outcome, ack, error)) {
      close_connection(error);
      return;
    }
    message.fds.clear();  // unused fds are closed now, not at the next message
  }
  wait_readable();
}

void SocketEndpoint::throttle(std::chrono::nanoseconds wait) {
  ++counters_.throttled;
  if (sys::worth_logging(counters_.throttled))
    spdlog::warn(
        "port {}: frontend over its share of the control thread; its messages wait {} ms (#{})",
        options_.name, std::chrono::ceil<std::chrono::milliseconds>(wait).count(),
        counters_.throttled);
  throttle_timer_.expires_after(wait);
  throttle_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_),
                              turn = connections_](const boost::system::error_code& ec) {
    if (!ec && !alive.expired() && connection_ && turn == connections_) on_readable();
  });
}

void SocketEndpoint::close_connection(const std::string& why) {
  if (!connection_) return;
  ++counters_.disconnections;
  last_disconnect_ = why.substr(0, 400);  // port.get shows it (at most 512 characters)
  const bool failed = !session_ran_;
  if (failed) {
    ++counters_.failed_sessions;
    // What QEMU does when it wants more queue pairs than the port offers:
    // it reads GET_QUEUE_NUM and hangs up.
    if (last_request_ == static_cast<std::uint32_t>(Request::kGetQueueNum))
      last_disconnect_ +=
          fmt::format(" right after GET_QUEUE_NUM: it may want more than the port's {} queue pairs",
                      device_.vring_count() / 2);
  }
  // Client mode: a frontend that refuses the device is asked again less and
  // less often; one whose rings ran is reconnected at once.
  std::chrono::milliseconds wait{0};
  if (options_.mode == Mode::kClient && !stopping_) {
    if (!failed) reconnect_delay_ = options_.reconnect_interval;
    wait = reconnect_delay_;
  }
  if (sys::worth_logging(counters_.disconnections))
    spdlog::info("port {}: frontend disconnected ({}){} (#{})", options_.name, last_disconnect_,
                 wait.count() != 0 ? fmt::format("; connecting again in {} ms", wait.count())
                                   : std::string(),
                 counters_.disconnections);
  session_ran_ = false;
  last_request_ = 0;
  if (connection_wait_) {
    connection_wait_->cancel();
    connection_wait_->release();
    connection_wait_.reset();
  }
  connection_.reset();
  device_.disconnect();
  if (stopping_) return;
  set_state(State::kWaiting);
  if (options_.mode == Mode::kClient) {
    schedule_reconnect();
    if (failed) reconnect_delay_ = std::min(2 * reconnect_delay_, options_.reconnect_max);
  }
}

void SocketEndpoint::log_failure(const std::string& what) {
  if (sys::worth_logging(counters_.failed_messages))
    spdlog::warn("port {}: {} (failure #{})", options_.name, what, counters_.failed_messages);
}

}  // namespace xdpvhost::vhost

#pragma once
// The one accept loop of every listener: the control socket, the metrics
// listener and each port's vhost-user socket. It accepts on an Asio acceptor
// and hands each connection to its owner (`admit`), one completion handler
// per connection, so a connect flood on one listener takes turns with
// everything else on the io_context.
//
// When accept fails (out of fds or memory, typically) the connection stays
// queued, and accepting again at once would spin: the loop rests for
// `backoff` and tries again, logging at the one rate limit. A listener that
// charges its clients for their turns (`pace`) rests as long as `pace` says
// before it accepts again.
//
// The owner may stop or destroy the loop at any time, from `admit` too: a
// completion queued before that (a reload destroys the owner in the same
// pass of the io_context) finds the loop's liveness token gone and touches
// nothing.

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "sys/log_rate.hpp"

namespace xdpvhost::sys {

template <class Protocol>
class AcceptLoop {
 public:
  using Acceptor = boost::asio::basic_socket_acceptor<Protocol>;
  using Socket = typename Protocol::socket;
  using Admit = std::function<void(Socket)>;
  // How long to rest before the next accept; zero or less: none.
  using Pace = std::function<std::chrono::nanoseconds()>;

  // `what` names the listener in the log ("control socket", "port vm1").
  AcceptLoop(Acceptor& acceptor, std::string what, std::chrono::milliseconds backoff, Admit admit,
             Pace pace = {})
      : acceptor_(acceptor),
        what_(std::move(what)),
        backoff_(backoff),
        admit_(std::move(admit)),
        pace_(std::move(pace)),
        timer_(acceptor.get_executor()) {}
  AcceptLoop(const AcceptLoop&) = delete;
  AcceptLoop& operator=(const AcceptLoop&) = delete;
  ~AcceptLoop() { stop(); }

  void start() {
    stopped_ = false;
    accept();
  }
  // No admit after this; the acceptor stays open (its owner closes it).
  void stop() {
    stopped_ = true;
    alive_ = std::make_shared<int>(0);  // completions already queued find theirs gone
    timer_.cancel();
    boost::system::error_code ignored;
    if (acceptor_.is_open()) acceptor_.cancel(ignored);
  }

  std::uint64_t failures() const noexcept { return failures_; }  // accepts that failed
  std::uint64_t paced() const noexcept { return paced_; }        // rests `pace` asked for

 private:
  void accept() {
    if (pace_) {
      if (const auto wait = pace_(); wait.count() > 0) {
        ++paced_;
        rest(wait);
        return;
      }
    }
    acceptor_.async_accept([this, alive = std::weak_ptr<int>(alive_)](
                               const boost::system::error_code& ec, Socket socket) {
      if (alive.expired() || stopped_ || ec == boost::asio::error::operation_aborted) return;
      if (ec) {
        if (worth_logging(++failures_))
          spdlog::warn("{}: cannot accept: {}; trying again in {} ms (#{})", what_, ec.message(),
                       backoff_.count(), failures_);
        rest(backoff_);
        return;
      }
      // Like every fd of the daemon's own: not inherited across an exec.
      ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
      admit_(std::move(socket));
      if (alive.expired() || stopped_) return;  // admit stopped or destroyed the loop
      accept();
    });
  }

  void rest(std::chrono::nanoseconds wait) {
    timer_.expires_after(wait);
    timer_.async_wait(
        [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
          if (!alive.expired() && !stopped_ && !ec) accept();
        });
  }

  Acceptor& acceptor_;
  std::string what_;
  std::chrono::milliseconds backoff_;
  Admit admit_;
  Pace pace_;
  boost::asio::steady_timer timer_;
  bool stopped_ = true;
  std::uint64_t failures_ = 0;
  std::uint64_t paced_ = 0;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xdpvhost::sys

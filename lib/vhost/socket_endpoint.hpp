#pragma once
// The unix socket of one vhost-user port on the control thread's io_context:
// server mode listens and serves one frontend at a time; client mode connects
// to the frontend's socket (QEMU in server mode, as KubeVirt runs it) and
// reconnects whenever it goes away. Either way the socket lies below one of
// the port socket directories (sys::port_socket_dirs) and is reached
// without following a symlink (sys/socket_directory.hpp); a live socket is
// never replaced. Connections are accepted by the one accept loop
// (sys::AcceptLoop: it rests when accept() runs out of fds instead of
// spinning). A frontend gets a share of the
// control thread (sys::CpuBudget, kept across its reconnections; connections
// accepted or turned away on the port's socket are charged to it too): past
// it, its messages and connections wait, and nobody else does.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sys/accept_loop.hpp"
#include "sys/cpu_budget.hpp"
#include "sys/unique_fd.hpp"
#include "sys/unix_acceptor.hpp"
#include "vhost/connection.hpp"
#include "vhost/device.hpp"
#include "vhost/socket_mode.hpp"

namespace xdpvhost::vhost {

class SocketEndpoint {
 public:
  using Mode = SocketMode;
  enum class State : std::uint8_t { kStopped, kWaiting, kConnected };

  struct Options {
    std::string name;  // for logs
    std::string path;
    Mode mode = Mode::kServer;
    // Client mode: the first wait before connecting again. After a session
    // that ended before any ring ran (a frontend that refuses the device,
    // e.g. QEMU wanting more queue pairs than offered), each wait doubles
    // up to reconnect_max; a session that ran a ring starts over.
    std::chrono::milliseconds reconnect_interval{250};
    std::chrono::milliseconds reconnect_max{8000};
    unsigned socket_mode = 0660;  // permissions of a listening socket
    // How long the listener rests after accept() failed (out of fds).
    std::chrono::milliseconds accept_backoff{100};
    sys::CpuBudget::Limits budget = kFrontendBudget;
  };

  struct Counters {
    std::uint64_t connections = 0;
    std::uint64_t disconnections = 0;
    std::uint64_t messages = 0;
    std::uint64_t failed_messages = 0;
    std::uint64_t rejected_connections = 0;
    std::uint64_t refused_paths = 0;    // client mode: path refused (symlink, not a socket)
    std::uint64_t throttled = 0;        // turns put off: the frontend was over its budget
    std::uint64_t failed_sessions = 0;  // sessions that ended before any ring ran
  };

  using StateCallback = std::function<void(State)>;

  // Messages handled per readiness event before others get their turn.
  static constexpr unsigned kMessagesPerTurn = 16;
  // A frontend's share of the control thread: 250 ms of CPU at the start
  // and after a rest, then 2 % of the time. A negotiation of one queue pair
  // costs the control thread about 0.4 ms, so QEMU starting, rebooting or
  // migrating a VM of 128 queue pairs never waits; a frontend resetting its
  // device in a loop gets ~50 resets a second instead of ~1000.
  static constexpr sys::CpuBudget::Limits kFrontendBudget{std::chrono::milliseconds(250), 0.02};

  SocketEndpoint(boost::asio::io_context& io, Options options, Device& device,
                 StateCallback on_state = {});
  ~SocketEndpoint();
  SocketEndpoint(const SocketEndpoint&) = delete;
  SocketEndpoint& operator=(const SocketEndpoint&) = delete;

  // Server: binds and listens (a stale socket file is replaced). Client:
  // starts connecting. Returns false with `error` if the path is unusable.
  bool start(std::string& error);
  // Closes the connection (the device forgets the session) and the listener.
  void stop();

  State state() const noexcept { return state_; }
  const Counters& counters() const noexcept { return counters_; }
  // Why the last session ended ("" before the first), and the wait before
  // the next connection attempt (client mode).
  const std::string& last_disconnect() const noexcept { return last_disconnect_; }
  std::chrono::milliseconds reconnect_delay() const noexcept { return reconnect_delay_; }
  const Options& options() const noexcept { return options_; }
  // The frontend's share of the control thread; work done elsewhere on the
  // port's behalf (a MAC learning decision) is charged to it too.
  sys::CpuBudget& budget() noexcept { return budget_; }

 private:
  void set_state(State s);
  void admit(boost::asio::local::stream_protocol::socket socket);
  void try_connect();
  void schedule_reconnect();
  void attach(sys::UniqueFd fd);
  void wait_readable();
  void on_readable();
  void throttle(std::chrono::nanoseconds wait);
  void close_connection(const std::string& why);
  void log_failure(const std::string& what);

  boost::asio::io_context& io_;
  Options options_;
  Device& device_;
  StateCallback on_state_;
  State state_ = State::kStopped;
  Counters counters_;

  sys::UnixAcceptor listener_;
  std::optional<sys::AcceptLoop<boost::asio::local::stream_protocol>> accept_loop_;
  std::unique_ptr<Connection> connection_;
  std::optional<boost::asio::posix::stream_descriptor> connection_wait_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer throttle_timer_;
  sys::CpuBudget budget_;
  std::string last_connect_error_;  // client mode: logged once per distinct error
  std::string last_disconnect_;
  std::chrono::milliseconds reconnect_delay_;
  bool session_ran_ = false;        // a ring of this session ran
  std::uint32_t last_request_ = 0;  // of this session, 0 before the first
  std::uint64_t connections_ = 0;   // connections accepted so far: which one a continuation is for
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // handlers hold a weak_ptr
  bool stopping_ = false;
};

}  // namespace xdpvhost::vhost

#pragma once
// The control socket: a unix stream socket on the control thread's
// io_context. One JSON-RPC request per line in, one reply per line out.
// Each client is served on its own; a client that stalls, sends garbage or
// goes away mid-request affects nobody else. A line longer than the request
// limit is answered with a request_too_large error and the client closed
// (its framing cannot be trusted any more).
//
// Who may connect: root, the daemon's own uid, and members of the socket's
// group (Options::group) -- checked with SO_PEERCRED and SO_PEERGROUPS on
// every connection, whatever the file mode says. A client that sends
// nothing for idle_timeout is closed. Of max_clients, the last slot is
// root's: others are refused once max_clients - 1 are connected, and when
// every slot is taken a root client still gets in, in place of the client
// idle longest (the liveness probe's `xdpvhostctl status` always answers).
// Connections are accepted by the one accept loop (sys::AcceptLoop: when
// accept() runs out of fds it rests for accept_backoff instead of spinning).

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "sys/accept_loop.hpp"
#include "sys/unix_acceptor.hpp"

namespace xdpvhost::daemon {

class ControlServer {
 public:
  struct Options {
    std::string path;
    unsigned mode = 0660;
    std::optional<std::string> group;
    std::size_t max_request_bytes = 1 << 20;
    std::size_t max_clients = 64;
    std::chrono::milliseconds idle_timeout{60000};
    std::chrono::milliseconds accept_backoff{100};
  };
  // Answers one request line; returns the reply line without the newline,
  // or an empty string for a notification (no reply).
  using Handler = std::function<std::string(std::string_view line)>;
  // The reply for a request that exceeds max_request_bytes.
  using TooLarge = std::function<std::string()>;

  ControlServer(boost::asio::io_context& io, Options options, Handler handler, TooLarge too_large);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds (replacing a stale socket file, never a live one), sets mode and
  // group, listens.
  bool start(std::string& error);
  // Closes the listener and every client; removes the socket file.
  void stop();

  std::size_t clients() const noexcept { return sessions_.size(); }
  const Options& options() const noexcept { return options_; }

 private:
  class Session;
  void admit(boost::asio::local::stream_protocol::socket socket);
  // Whether the peer of `fd` may use the control socket; `who` describes it.
  bool allowed(int fd, bool& is_root, std::string& who) const;
  void close(const std::shared_ptr<Session>& session);

  Options options_;
  Handler handler_;
  TooLarge too_large_;
  sys::UnixAcceptor listener_;
  std::optional<sys::AcceptLoop<boost::asio::local::stream_protocol>> accept_loop_;
  std::optional<gid_t> group_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::uint64_t refused_ = 0;
  std::uint64_t refused_peers_ = 0;
  std::uint64_t evicted_ = 0;
};

}  // namespace xdpvhost::daemon

#pragma once
// The control socket: a unix stream socket on the control thread's
// io_context. One JSON-RPC request per line in, one reply per line out.
// Each client is served on its own; a client that stalls, sends garbage or
// goes away mid-request affects nobody else. A line longer than the request
// limit is answered with a request_too_large error and the client closed
// (its framing cannot be trusted any more).

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace xdpvhost::daemon {

class ControlServer {
 public:
  struct Options {
    std::string path;
    unsigned mode = 0660;
    std::optional<std::string> group;
    std::size_t max_request_bytes = 1 << 20;
    std::size_t max_clients = 64;
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

  // Binds (replacing a stale socket file), sets mode and group, listens.
  bool start(std::string& error);
  // Closes the listener and every client; removes the socket file.
  void stop();

  std::size_t clients() const noexcept { return sessions_.size(); }

 private:
  class Session;
  void accept();
  void close(const std::shared_ptr<Session>& session);

  boost::asio::io_context& io_;
  Options options_;
  Handler handler_;
  TooLarge too_large_;
  std::optional<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::uint64_t refused_ = 0;
};

}  // namespace xdpvhost::daemon

#pragma once
// A listening unix socket served by an Asio acceptor: the socket file made by
// listen_unix (below a root, no symlink followed, a live socket never
// replaced), its fd owned by the acceptor. close() -- and the destructor --
// closes it and removes the socket file, only the one it bound. The control
// socket and each port's vhost-user socket listen through one.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <optional>
#include <string>

#include "sys/unix_socket_path.hpp"

namespace xdpvhost::sys {

class UnixAcceptor {
 public:
  using Acceptor = boost::asio::local::stream_protocol::acceptor;

  explicit UnixAcceptor(boost::asio::io_context& io) : io_(io) {}
  ~UnixAcceptor() { close(); }
  UnixAcceptor(const UnixAcceptor&) = delete;
  UnixAcceptor& operator=(const UnixAcceptor&) = delete;

  // Listens at `path`; false with `error` if it cannot.
  bool open(const std::string& path, const UnixListenOptions& options, std::string& error);
  bool is_open() const noexcept { return acceptor_.has_value(); }
  // Only while open.
  Acceptor& acceptor() noexcept { return *acceptor_; }
  void close() noexcept;

 private:
  boost::asio::io_context& io_;
  std::optional<Acceptor> acceptor_;
  UnixListener listener_;  // the socket file (its fd is the acceptor's)
};

}  // namespace xdpvhost::sys

#include "sys/unix_acceptor.hpp"

namespace xdpvhost::sys {

bool UnixAcceptor::open(const std::string& path, const UnixListenOptions& options,
                        std::string& error) {
  close();
  UnixListener listener = listen_unix(path, options, error);
  if (!listener.valid()) return false;
  boost::system::error_code ec;
  acceptor_.emplace(io_);
  acceptor_->assign(boost::asio::local::stream_protocol(), listener.fd.get(), ec);
  if (ec) {
    error = path + ": " + ec.message();
    acceptor_.reset();
    remove_unix_socket(listener);
    return false;
  }
  listener.fd.release();  // the acceptor owns it now
  listener_ = std::move(listener);
  return true;
}

void UnixAcceptor::close() noexcept {
  if (!acceptor_) return;
  boost::system::error_code ignored;
  acceptor_->close(ignored);
  acceptor_.reset();
  remove_unix_socket(listener_);
}

}  // namespace xdpvhost::sys

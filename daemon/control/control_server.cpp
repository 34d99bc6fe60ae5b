#include "control/control_server.hpp"

#include <grp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/write.hpp>
#include <deque>
#include <filesystem>

#include "sys/log_rate.hpp"
#include "sys/unix_socket_path.hpp"

namespace xdpvhost::daemon {

using boost::asio::local::stream_protocol;

class ControlServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ControlServer& server, stream_protocol::socket socket)
      : server_(server), socket_(std::move(socket)) {}

  void start() { read(); }
  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  void read() {
    auto self = shared_from_this();
    socket_.async_read_some(boost::asio::buffer(chunk_),
                            [this, self](const boost::system::error_code& ec, std::size_t n) {
                              if (ec) {
                                server_.close(self);
                                return;
                              }
                              on_data(n);
                            });
  }

  void on_data(std::size_t n) {
    pending_.append(chunk_.data(), n);
    std::size_t start = 0;
    for (;;) {
      const std::size_t end = pending_.find('\n', start);
      if (end == std::string::npos) break;
      std::string_view line(pending_.data() + start, end - start);
      if (line.size() > server_.options_.max_request_bytes) {
        too_large();
        return;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty()) {
        std::string reply = server_.handler_(line);
        if (!reply.empty()) send(std::move(reply));
      }
      start = end + 1;
    }
    pending_.erase(0, start);
    if (pending_.size() > server_.options_.max_request_bytes) {
      // No newline within the limit.
      too_large();
      return;
    }
    // A client that does not read its replies is not read from either:
    // reading resumes once they are written.
    if (out_.empty())
      read();
    else
      read_when_written_ = true;
  }

  // Answers once and hangs up: the framing cannot be trusted any more.
  void too_large() {
    pending_.clear();
    closing_ = true;
    send(server_.too_large_());
  }

  void send(std::string reply) {
    reply.push_back('\n');
    out_.push_back(std::move(reply));
    if (out_.size() == 1) write();
  }

  void write() {
    auto self = shared_from_this();
    boost::asio::async_write(socket_, boost::asio::buffer(out_.front()),
                             [this, self](const boost::system::error_code& ec, std::size_t) {
                               if (ec) {
                                 server_.close(self);
                                 return;
                               }
                               out_.pop_front();
                               if (!out_.empty()) {
                                 write();
                               } else if (closing_) {
                                 server_.close(self);
                               } else if (read_when_written_) {
                                 read_when_written_ = false;
                                 read();
                               }
                             });
  }

  ControlServer& server_;
  stream_protocol::socket socket_;
  std::array<char, 4096> chunk_{};
  std::string pending_;
  std::deque<std::string> out_;
  bool closing_ = false;
  bool read_when_written_ = false;
};

ControlServer::ControlServer(boost::asio::io_context& io, Options options, Handler handler,
                             TooLarge too_large)
    : io_(io),
      options_(std::move(options)),
      handler_(std::move(handler)),
      too_large_(std::move(too_large)) {}

ControlServer::~ControlServer() {
  stop();
}

bool ControlServer::start(std::string& error) {
  sys::UnixListenOptions listen;
  listen.mode = options_.mode;
  listen.backlog = SOMAXCONN;
  if (options_.group) {
    struct group* g = ::getgrnam(options_.group->c_str());
    if (g == nullptr) {
      error = "control socket " + options_.path + ": there is no group " + *options_.group;
      return false;
    }
    listen.group = g->gr_gid;
  }
  sys::UniqueFd fd = sys::listen_unix(options_.path, listen, error);
  if (!fd.valid()) {
    error = "control socket: " + error;
    return false;
  }
  boost::system::error_code ec;
  acceptor_.emplace(io_);
  acceptor_->assign(stream_protocol(), fd.get(), ec);
  if (ec) {
    error = "control socket " + options_.path + ": " + ec.message();
    acceptor_.reset();
    sys::remove_unix_socket(options_.path);
    return false;
  }
  fd.release();  // the acceptor owns it now
  accept();
  return true;
}

void ControlServer::stop() {
  if (acceptor_) {
    boost::system::error_code ignored;
    acceptor_->close(ignored);
    acceptor_.reset();
    sys::remove_unix_socket(options_.path);
  }
  for (const auto& s : sessions_) s->close();
  sessions_.clear();
}

void ControlServer::accept() {
  acceptor_->async_accept(
      [this](const boost::system::error_code& ec, stream_protocol::socket socket) {
        if (ec == boost::asio::error::operation_aborted || !acceptor_) return;
        if (!ec) {
          if (sessions_.size() >= options_.max_clients) {
            // A client retrying in a loop must not flood the log.
            if (sys::worth_logging(++refused_))
              spdlog::warn("control socket: {} clients connected, refused {} connection(s) so far",
                           sessions_.size(), refused_);
          } else {
            auto session = std::make_shared<Session>(*this, std::move(socket));
            sessions_.insert(session);
            session->start();
          }
        }
        accept();
      });
}

void ControlServer::close(const std::shared_ptr<Session>& session) {
  session->close();
  sessions_.erase(session);
}

}  // namespace xdpvhost::daemon

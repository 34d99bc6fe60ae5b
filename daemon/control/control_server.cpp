#include "control/control_server.hpp"

#include <grp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/write.hpp>
#include <deque>

#include "sys/log_rate.hpp"
#include "sys/unix_socket_path.hpp"

namespace xdpvhost::daemon {

using boost::asio::local::stream_protocol;

class ControlServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ControlServer& server, stream_protocol::socket socket)
      : server_(server), socket_(std::move(socket)), idle_(socket_.get_executor()) {}

  void start() {
    touch();
    watch_idle();
    read();
  }
  void close() {
    closed_ = true;
    boost::system::error_code ignored;
    idle_.cancel();
    socket_.close(ignored);
  }
  std::chrono::steady_clock::time_point last_activity() const noexcept { return last_; }

 private:
  // Activity only moves last_ (no timer syscall per read).
  void touch() { last_ = std::chrono::steady_clock::now(); }
  std::chrono::steady_clock::time_point idle_deadline() const noexcept {
    return last_ + server_.options_.idle_timeout;
  }

  // Closes the session once nothing has arrived for idle_timeout: the timer
  // is set for the deadline of the last activity it knows of, and when it
  // fires early (something arrived since) it is set again for the new one.
  void watch_idle() {
    idle_.expires_at(idle_deadline());
    auto self = shared_from_this();
    idle_.async_wait([this, self](const boost::system::error_code&) {
      if (closed_) return;
      if (idle_deadline() <= std::chrono::steady_clock::now()) {
        spdlog::debug("control socket: closing a client idle for {} ms",
                      server_.options_.idle_timeout.count());
        server_.close(self);
        return;
      }
      watch_idle();
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
                              touch();
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
                               if (closed_) return;
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
  boost::asio::steady_timer idle_;
  std::chrono::steady_clock::time_point last_;
  bool closed_ = false;
  std::array<char, 4096> chunk_{};
  std::string pending_;
  std::deque<std::string> out_;
  bool closing_ = false;
  bool read_when_written_ = false;
};

ControlServer::ControlServer(boost::asio::io_context& io, Options options, Handler handler,
                             TooLarge too_large)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      too_large_(std::move(too_large)),
      listener_(io) {}

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
    group_ = g->gr_gid;
  }
  if (!listener_.open(options_.path, listen, error)) {
    error = "control socket: " + error;
    return false;
  }
  accept_loop_.emplace(listener_.acceptor(), "control socket", options_.accept_backoff,
                       [this](stream_protocol::socket socket) { admit(std::move(socket)); });
  accept_loop_->start();
  return true;
}

void ControlServer::stop() {
  accept_loop_.reset();
  listener_.close();
  for (const auto& s : sessions_) s->close();
  sessions_.clear();
}

bool ControlServer::allowed(int fd, bool& is_root, std::string& who) const {
  is_root = false;
  const auto cred = sys::peer_credentials(fd);
  if (!cred) {
    who = "a peer without credentials";
    return false;
  }
  who = "pid " + std::to_string(cred->pid) + " uid " + std::to_string(cred->uid) + " gid " +
        std::to_string(cred->gid);
  is_root = cred->uid == 0;
  if (is_root || cred->uid == ::geteuid()) return true;
  if (!group_) return false;
  if (cred->gid == *group_) return true;
  for (gid_t g : sys::peer_groups(fd))
    if (g == *group_) return true;
  return false;
}

void ControlServer::admit(stream_protocol::socket socket) {
  bool is_root = false;
  std::string who;
  if (!allowed(socket.native_handle(), is_root, who)) {
    if (sys::worth_logging(++refused_peers_))
      spdlog::warn(
          "control socket: refused {}: not root, the daemon's uid or a member of {} (#{})", who,
          options_.group ? "group " + *options_.group : std::string("control.group (unset)"),
          refused_peers_);
    return;  // closed as `socket` goes
  }
  // The last slot is root's; a full table still lets root in.
  const std::size_t limit = is_root ? options_.max_clients : options_.max_clients - 1;
  if (sessions_.size() >= limit && is_root && !sessions_.empty()) {
    auto idlest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if ((*it)->last_activity() < (*idlest)->last_activity()) idlest = it;
    if (sys::worth_logging(++evicted_))
      spdlog::warn(
          "control socket: {} clients connected: closed the one idle longest for root "
          "{} (#{})",
          sessions_.size(), who, evicted_);
    const std::shared_ptr<Session> victim = *idlest;  // not a reference into the set
    close(victim);
  }
  if (sessions_.size() >= limit) {
    // A client retrying in a loop must not flood the log.
    if (sys::worth_logging(++refused_))
      spdlog::warn("control socket: {} clients connected, refused {} connection(s) so far",
                   sessions_.size(), refused_);
    return;
  }
  auto session = std::make_shared<Session>(*this, std::move(socket));
  sessions_.insert(session);
  session->start();
}

void ControlServer::close(const std::shared_ptr<Session>& session) {
  session->close();
  sessions_.erase(session);
}

}  // namespace xdpvhost::daemon

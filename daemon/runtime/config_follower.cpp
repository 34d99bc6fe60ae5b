#include "runtime/config_follower.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <spdlog/spdlog.h>

namespace xdpvhost::daemon {
namespace {

// The kubelet's atomic writer renames this symlink to publish a ConfigMap's
// new contents (pkg/volume/util/atomic_writer.go).
constexpr std::string_view kAtomicWriterData = "..data";

constexpr std::uint32_t kWatched = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
                                   IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

}  // namespace

ConfigFollower::ConfigFollower(boost::asio::io_context& io, const std::string& path,
                               std::function<void()> changed, std::chrono::milliseconds settle,
                               std::chrono::milliseconds retry)
    : changed_(std::move(changed)),
      settle_(settle),
      retry_(retry),
      inotify_(io),
      timer_(io),
      retry_timer_(io) {
  const auto slash = path.rfind('/');
  directory_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  file_ = slash == std::string::npos ? path : path.substr(slash + 1);
}

ConfigFollower::~ConfigFollower() {
  stop();
}

std::string ConfigFollower::start() {
  return watch();
}

std::string ConfigFollower::watch() {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return std::string("inotify_init1: ") + std::strerror(errno);
  inotify_.assign(fd);  // owned from here on
  if (::inotify_add_watch(fd, directory_.c_str(), kWatched | IN_ONLYDIR) < 0) {
    const int err = errno;
    boost::system::error_code ignored;
    inotify_.close(ignored);
    return "cannot watch " + directory_ + ": " + std::strerror(err);
  }
  read_events();
  return "";
}

void ConfigFollower::stop() {
  timer_.cancel();
  retry_timer_.cancel();
  boost::system::error_code ignored;
  if (inotify_.is_open()) inotify_.close(ignored);
}

void ConfigFollower::lost(const std::string& why) {
  timer_.cancel();  // a change pending is looked at once watched again
  boost::system::error_code ignored;
  inotify_.close(ignored);  // cancels the pending wait
  if (watch_changed_) watch_changed_(false, why);
  retry();
}

void ConfigFollower::retry() {
  retry_timer_.expires_after(retry_);
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // stopped
    if (!watch().empty()) {
      retry();
      return;
    }
    if (watch_changed_) watch_changed_(true, "");
    settle();
  });
}

void ConfigFollower::read_events() {
  inotify_.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this](const boost::system::error_code& ec) {
        if (ec) return;  // stopped
        bool about_file = false;
        const char* gone = nullptr;
        for (;;) {
          const ssize_t n = ::read(inotify_.native_handle(), buffer_, sizeof buffer_);
          if (n <= 0) break;
          for (ssize_t at = 0; at < n;) {
            inotify_event event;
            std::memcpy(&event, buffer_ + at, sizeof event);
            const std::string_view name =
                event.len == 0 ? std::string_view() : std::string_view(buffer_ + at + sizeof event);
            if ((event.mask & IN_Q_OVERFLOW) != 0 || name == file_ || name == kAtomicWriterData)
              about_file = true;
            if ((event.mask & IN_DELETE_SELF) != 0) gone = "was removed";
            if ((event.mask & IN_MOVE_SELF) != 0) gone = "was moved";
            if ((event.mask & IN_UNMOUNT) != 0) gone = "was unmounted";
            if ((event.mask & IN_IGNORED) != 0 && gone == nullptr) gone = "is no longer watched";
            at += static_cast<ssize_t>(sizeof event + event.len);
          }
        }
        if (gone != nullptr) {
          lost(directory_ + " " + gone);
          return;
        }
        if (about_file) {
          ++events_;
          settle();
        }
        read_events();
      });
}

void ConfigFollower::settle() {
  timer_.expires_after(settle_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) changed_();
  });
}

}  // namespace xdpvhost::daemon

#pragma once
// Follows the --config file: an inotify watch on its directory, so that
// every way the file is replaced is seen: a ConfigMap volume's update (the
// kubelet writes a new timestamped directory and renames the "..data"
// symlink over the old one; the file itself is a symlink through it), an
// editor's write-and-rename, a write in place. Events settle for `settle`
// (a burst of writes is one change), then `changed` runs on the io_context.
// Whether anything did change is the caller's to judge (it compares what it
// loads with what it runs).
//
// A directory that goes away (removed, moved, unmounted) ends the watch:
// `watch` runs with false and why, and the follower tries to watch the
// path again every `retry`. Once it watches again, `watch` runs with true
// and `changed` runs (the file may have changed meanwhile).

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace xdpvhost::daemon {

class ConfigFollower {
 public:
  using WatchChanged = std::function<void(bool watching, const std::string& why)>;

  ConfigFollower(boost::asio::io_context& io, const std::string& path,
                 std::function<void()> changed,
                 std::chrono::milliseconds settle = std::chrono::milliseconds(200),
                 std::chrono::milliseconds retry = std::chrono::seconds(5));
  ~ConfigFollower();
  ConfigFollower(const ConfigFollower&) = delete;
  ConfigFollower& operator=(const ConfigFollower&) = delete;

  // Runs when the watch is lost or taken up again.
  void on_watch_changed(WatchChanged watch) { watch_changed_ = std::move(watch); }

  // "" or why the directory cannot be watched.
  std::string start();
  void stop();

  bool watching() const noexcept { return inotify_.is_open(); }

  // Events about the file seen so far (tests).
  std::uint64_t events() const noexcept { return events_; }

 private:
  std::string watch();
  void read_events();
  void settle();
  void lost(const std::string& why);
  void retry();

  std::string directory_;
  std::string file_;
  std::function<void()> changed_;
  WatchChanged watch_changed_;
  std::chrono::milliseconds settle_;
  std::chrono::milliseconds retry_;
  boost::asio::posix::stream_descriptor inotify_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer retry_timer_;
  alignas(8) char buffer_[4096];
  std::uint64_t events_ = 0;
};

}  // namespace xdpvhost::daemon

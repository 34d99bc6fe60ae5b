#pragma once
// The watcher of the service threads' syscalls on peers' fds
// (sys/peer_io_watch.hpp): a thread of its own that checks every thread each
// kInterval, so that a call a peer made sleep is interrupted within two
// intervals -- its queue breaks, the thread and its other ports go on. Its
// own thread, not a timer of the control thread: that one may be waiting on
// the very service thread that sleeps (ServiceThread::call).

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "sys/peer_io_watch.hpp"

namespace xdpvhost::dataplane {

class PeerIoWatcher {
 public:
  static constexpr std::chrono::milliseconds kInterval{100};

  // Installs the interrupting signal's handler and starts watching.
  explicit PeerIoWatcher(std::vector<sys::PeerIoWatch*> watches);
  // Stops watching (before the watched threads end).
  ~PeerIoWatcher();
  PeerIoWatcher(const PeerIoWatcher&) = delete;
  PeerIoWatcher& operator=(const PeerIoWatcher&) = delete;

 private:
  void run();

  std::vector<sys::PeerIoWatch*> watches_;
  std::mutex mutex_;
  std::condition_variable stop_wanted_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace xdpvhost::dataplane

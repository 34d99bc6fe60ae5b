#pragma once
// The watcher of the service threads: a thread of its own that checks every
// service thread each kInterval, for two things.
// - A syscall on a peer's fd that the peer made sleep (sys/peer_io_watch.hpp)
//   is interrupted within two intervals: its queue breaks, the thread and its
//   other ports go on.
// - A thread that is awake yet finishes no round for Heartbeat::kDeadline
//   has missed its heartbeat (heartbeat.hpp): logged, counted, and reported
//   by health until it runs rounds again. The log line says what the kernel
//   saw the thread do since it went silent (sys/thread_sample.hpp): run,
//   wait for a CPU, or sleep, and where.
// Its own thread, not a timer of the control thread: that one may be waiting
// on the very service thread that sleeps or is stuck (ServiceThread::call).

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sys/thread_sample.hpp"

namespace xdpvhost::dataplane {

class ServiceThread;

class ThreadWatcher {
 public:
  static constexpr std::chrono::milliseconds kInterval{100};

  // Installs the interrupting signal's handler and starts watching.
  explicit ThreadWatcher(std::vector<ServiceThread*> threads);
  // Stops watching (before the watched threads end).
  ~ThreadWatcher();
  ThreadWatcher(const ThreadWatcher&) = delete;
  ThreadWatcher& operator=(const ThreadWatcher&) = delete;

 private:
  void run();
  void check(std::size_t index);

  std::vector<ServiceThread*> threads_;
  // Per thread: a sample taken when its current silence was first seen.
  std::vector<std::optional<sys::ThreadSample>> silent_since_;
  std::mutex mutex_;
  std::condition_variable stop_wanted_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace xdpvhost::dataplane

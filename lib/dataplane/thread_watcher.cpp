#include "dataplane/thread_watcher.hpp"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include "dataplane/service_thread.hpp"
#include "sys/log_rate.hpp"

namespace xdpvhost::dataplane {

ThreadWatcher::ThreadWatcher(std::vector<ServiceThread*> threads) : threads_(std::move(threads)) {
  sys::PeerIoWatch::install_handler();
  thread_ = std::thread([this] { run(); });
}

ThreadWatcher::~ThreadWatcher() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_wanted_.notify_one();
  thread_.join();
}

void ThreadWatcher::run() {
  ::pthread_setname_np(::pthread_self(), "xdpvhost-watch");
  std::unique_lock lock(mutex_);
  while (!stop_wanted_.wait_for(lock, kInterval, [this] { return stop_; }))
    for (ServiceThread* t : threads_) check(*t);
}

void ThreadWatcher::check(ServiceThread& t) {
  sys::PeerIoWatch& io = t.peer_io();
  if (io.check() && sys::worth_logging(io.interrupts()))
    spdlog::warn(
        "service thread {}: a syscall on a peer's fd slept for over {} ms (the peer cleared "
        "O_NONBLOCK); interrupted, that queue breaks (#{})",
        t.index(), kInterval.count(), io.interrupts());

  Heartbeat& heart = t.heartbeat();
  const bool was_missing = heart.missing_now();
  const std::chrono::milliseconds silence = heart.silence();  // before this check
  if (heart.check(t.owes_no_round(), Heartbeat::Clock::now())) {
    if (sys::worth_logging(heart.misses()))
      spdlog::warn(
          "service thread {}: awake ({}) but no poll round for over {} ms: a round is stuck, or "
          "the thread gets no CPU (#{})",
          t.index(), t.reported_state(), Heartbeat::kDeadline.count(), heart.misses());
  } else if (was_missing && heart.silence().count() == 0 && sys::worth_logging(heart.misses())) {
    spdlog::info("service thread {}: runs rounds again after about {} ms without one (#{})",
                 t.index(), silence.count(), heart.misses());
  }
}

}  // namespace xdpvhost::dataplane

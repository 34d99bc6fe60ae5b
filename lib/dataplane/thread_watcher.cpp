#include "dataplane/thread_watcher.hpp"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include "dataplane/service_thread.hpp"
#include "sys/log_rate.hpp"

namespace xdpvhost::dataplane {

ThreadWatcher::ThreadWatcher(std::vector<ServiceThread*> threads)
    : threads_(std::move(threads)), silent_since_(threads_.size()) {
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
    for (std::size_t i = 0; i < threads_.size(); ++i) check(i);
}

void ThreadWatcher::check(std::size_t index) {
  ServiceThread& t = *threads_[index];
  sys::PeerIoWatch& io = t.peer_io();
  if (io.check() && sys::worth_logging(io.interrupts()))
    spdlog::warn(
        "service thread {}: a syscall on a peer's fd slept for over {} ms (the peer cleared "
        "O_NONBLOCK); interrupted, that queue breaks (#{})",
        t.index(), kInterval.count(), io.interrupts());

  Heartbeat& heart = t.heartbeat();
  const bool was_missing = heart.missing_now();
  const std::chrono::milliseconds silence = heart.silence();  // before this check
  std::optional<sys::ThreadSample>& since = silent_since_[index];
  const bool missed = heart.check(t.owes_no_round(), Heartbeat::Clock::now());
  if (missed) {
    if (sys::worth_logging(heart.misses()))
      spdlog::warn(
          "service thread {}: awake ({}) but no poll round for over {} ms: a round is stuck, or "
          "the thread gets no CPU (#{}); kernel: {}",
          t.index(), t.reported_state(), Heartbeat::kDeadline.count(), heart.misses(),
          sys::describe_between(since.value_or(sys::ThreadSample{}), sys::sample_thread(t.tid())));
  } else if (was_missing && heart.silence().count() == 0 && sys::worth_logging(heart.misses())) {
    spdlog::info("service thread {}: runs rounds again after about {} ms without one (#{})",
                 t.index(), silence.count(), heart.misses());
  }
  // The first check that finds it silent samples it: rare for a thread that
  // beats each round, so the files are read only when a stall may begin.
  if (heart.silence().count() == 0)
    since.reset();
  else if (!since && !missed && t.tid() != 0)
    since = sys::sample_thread(t.tid());
}

}  // namespace xdpvhost::dataplane

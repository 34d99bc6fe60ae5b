#pragma once
// Control-to-datapath commands. The control side posts closures; the service
// thread runs them between bursts. Posting takes a mutex (control path only);
// the datapath checks one atomic flag per round and takes the mutex only when
// something is queued. The eventfd wakes a sleeping thread.

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>

#include "sys/event_fd.hpp"

namespace xdpvhost::dataplane {

class CommandQueue {
 public:
  using Command = std::function<void()>;

  void post(Command command) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(command));
      pending_.store(true, std::memory_order_seq_cst);
    }
    wake_.notify();
  }

  bool pending() const noexcept { return pending_.load(std::memory_order_acquire); }

  // Runs everything queued; returns how many commands ran.
  unsigned run_pending() {
    std::deque<Command> batch;
    {
      std::lock_guard lock(mutex_);
      batch.swap(queue_);
      pending_.store(false, std::memory_order_relaxed);
    }
    for (auto& c : batch) c();
    return static_cast<unsigned>(batch.size());
  }

  int fd() const noexcept { return wake_.get(); }
  void clear_wakeup() const noexcept { wake_.drain(); }

 private:
  std::mutex mutex_;
  std::deque<Command> queue_;
  std::atomic<bool> pending_{false};
  sys::EventFd wake_;
};

}  // namespace xdpvhost::dataplane

#include "dataplane/peer_io_watcher.hpp"

#include <pthread.h>

#include <spdlog/spdlog.h>

#include "sys/log_rate.hpp"

namespace xdpvhost::dataplane {

PeerIoWatcher::PeerIoWatcher(std::vector<sys::PeerIoWatch*> watches)
    : watches_(std::move(watches)) {
  sys::PeerIoWatch::install_handler();
  thread_ = std::thread([this] { run(); });
}

PeerIoWatcher::~PeerIoWatcher() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_wanted_.notify_one();
  thread_.join();
}

void PeerIoWatcher::run() {
  ::pthread_setname_np(::pthread_self(), "xdpvhost-watch");
  std::unique_lock lock(mutex_);
  while (!stop_wanted_.wait_for(lock, kInterval, [this] { return stop_; })) {
    for (std::size_t i = 0; i < watches_.size(); ++i)
      if (watches_[i]->check() && sys::worth_logging(watches_[i]->interrupts()))
        spdlog::warn(
            "service thread {}: a syscall on a peer's fd slept for over {} ms (the peer cleared "
            "O_NONBLOCK); interrupted, that queue breaks (#{})",
            i, kInterval.count(), watches_[i]->interrupts());
  }
}

}  // namespace xdpvhost::dataplane

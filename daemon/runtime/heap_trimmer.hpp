#pragma once
// Every kHeapTrimInterval, if the allocator holds kHeapTrimAbove or more
// free, hands its free pages back to the kernel (sys::give_back_free_heap):
// after guests and ports go, RSS comes back down to the live heap instead
// of staying at the peak. Runs on the control thread; the datapath does
// not allocate, so it never waits on the arenas' locks.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>

namespace xdpvhost::daemon {

inline constexpr std::chrono::seconds kHeapTrimInterval{5};
inline constexpr std::uint64_t kHeapTrimAbove = 2 << 20;

class HeapTrimmer {
 public:
  explicit HeapTrimmer(boost::asio::io_context& io) : timer_(io) {}
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  void start();
  void stop() { timer_.cancel(); }
  // One check now; true if pages were handed back.
  bool tick();
  std::uint64_t trims() const noexcept { return trims_; }

 private:
  void arm();
  boost::asio::steady_timer timer_;
  std::uint64_t trims_ = 0;
};

}  // namespace xdpvhost::daemon

#pragma once
// Hands the heap's free pages back to the kernel (sys::give_back_free_heap)
// soon after the heap shrank: after guests and ports go, RSS comes back down
// to the live heap instead of staying at the peak.
//
// Every kHeapCheckInterval it reads the heap's figures. It trims when the
// heap in use fell by kHeapGaveBack or more from its peak since the last
// trim (ports or guests went), and otherwise every kHeapTrimEvery checks
// (churn that came and went between two checks). Either way only when the
// allocator holds kHeapTrimAbove or more free. A check costs one walk of
// the arenas' bins (tens of microseconds); a trim a few hundred, and only
// after memory was freed. Runs on the control thread; the datapath does not
// allocate, so it never waits on the arenas' locks.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>

namespace xdpvhost::daemon {

inline constexpr std::chrono::seconds kHeapCheckInterval{1};
inline constexpr unsigned kHeapTrimEvery = 10;            // checks
inline constexpr std::uint64_t kHeapGaveBack = 1 << 20;   // bytes
inline constexpr std::uint64_t kHeapTrimAbove = 2 << 20;  // bytes

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
  std::uint64_t peak_in_use_ = 0;  // since the last trim
  unsigned checks_since_trim_ = 0;
  std::uint64_t trims_ = 0;
};

}  // namespace xdpvhost::daemon

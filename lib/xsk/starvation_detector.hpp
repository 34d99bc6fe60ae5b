#pragma once
// Notices when an AF_XDP socket stops receiving although frames are being
// offered to it -- the trap of preferred busy polling (with
// SO_PREFER_BUSY_POLL the kernel leaves NAPI processing to the
// application's busy polls; DPDK's af_xdp PMD on veth once got one frame and
// then nothing). The service thread reports every poll round; at the end of
// each window of rounds it takes a sample and asks for a verdict:
//
//   RX frames in the window > 0            -> healthy
//   nothing offered, no kernel drops       -> idle (healthy)
//   no RX, and in the window ...
//     rx_fill_ring_empty_descs grew, or rx_dropped grew with the fill ring
//     empty                                -> kFillRingEmpty (refill/leak bug)
//     rx_ring_full grew                    -> kRxRingFull (not consuming)
//     `offered` grew by >= min_offered     -> kNoDelivery: frames do not reach
//                                             the socket -- with preferred busy
//                                             polling on, fall back to
//                                             non-preferred (apply_busy_poll
//                                             with prefer = false)
//
// A verdict of starvation needs `windows_to_trip` such windows in a row. No
// clock is involved: windows are counted in poll rounds.
//
// `offered` is a monotonic count of frames meant for this socket that the
// caller can observe outside the RX ring: the XDP program's redirected
// counter (moves only when XDP runs, e.g. on veth where XDP runs in the
// sender's context), or the device's per-queue RX/missed counters. Whatever
// it is, it must not include traffic for other queues.

#include <cstdint>
#include <string>

#include "xsk/xsk_socket.hpp"

namespace xdpvhost::xsk {

struct StarvationConfig {
  std::uint32_t window_rounds = 4096;  // poll rounds per window
  std::uint64_t min_offered = 8;       // offered frames in a window that make "no RX" suspicious
  std::uint32_t windows_to_trip = 2;   // consecutive starving windows before the verdict
};

// Taken by the caller when round() says a window ended.
struct StarvationSample {
  std::uint64_t offered = 0;     // monotonic, see above
  XskStatistics xsk;             // XskSocket::read_statistics()
  std::uint32_t fill_level = 0;  // Umem::fill_level()
};

enum class StarvationCause : std::uint8_t { kNone, kNoDelivery, kFillRingEmpty, kRxRingFull };
const char* to_string(StarvationCause cause);

struct StarvationVerdict {
  bool starving = false;                           // windows_to_trip starving windows in a row
  StarvationCause cause = StarvationCause::kNone;  // of the last window
  std::string reason;                              // human-readable, with the deltas seen
};

class StarvationDetector {
 public:
  explicit StarvationDetector(const StarvationConfig& config = {});

  // Once per poll round with the frames taken off the RX ring. Returns true
  // when a window is complete: take a sample and call evaluate().
  bool round(std::uint32_t rx_frames) noexcept {
    window_rx_ += rx_frames;
    return ++rounds_ >= config_.window_rounds;
  }

  // Closes the window. The first call only records the baseline.
  StarvationVerdict evaluate(const StarvationSample& sample);

  // Forget history (e.g. after switching busy-poll mode).
  void reset() noexcept;

  std::uint32_t starving_windows() const noexcept { return starving_windows_; }

 private:
  StarvationConfig config_;
  std::uint32_t rounds_ = 0;
  std::uint64_t window_rx_ = 0;
  bool have_baseline_ = false;
  StarvationSample last_;
  std::uint32_t starving_windows_ = 0;
};

}  // namespace xdpvhost::xsk

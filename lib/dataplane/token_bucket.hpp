#pragma once
// A token bucket on a service thread: `rate` tokens per second, holding at
// most `capacity`. A guest port keeps two: its broadcast and multicast
// frames (flood_rate, a tenth of a second's worth and at least 64, so a
// guest that floods costs the others on the switch and the node's flood
// path a bounded number of copies) and its MAC learning requests
// (mac_learning.relearn_per_s and relearn_burst, so a guest cycling through
// source MACs costs the control thread, the switch table, the XDP map and
// the NIC's filter a bounded number of decisions). The clock is read only
// when the bucket runs empty.

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace xdpvhost::dataplane {

class TokenBucket {
 public:
  // rate 0: no limit. The bucket starts full.
  void set_rate(std::uint32_t rate, std::uint64_t capacity) noexcept {
    rate_ = rate;
    capacity_ = std::max<std::uint64_t>(capacity, 1);
    tokens_ = capacity_;
    last_ns_ = 0;
  }

  // Whether `n` more tokens may be taken now (a GSO frame's segments, each a
  // copy to every guest without GSO; at most a full bucket's worth).
  bool allow(std::uint64_t n = 1) noexcept {
    if (rate_ == 0) return true;
    const std::uint64_t cost = std::min(n, capacity_);
    if (tokens_ < cost) refill();
    if (tokens_ < cost) return false;
    tokens_ -= cost;
    return true;
  }

 private:
  void refill() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const std::uint64_t now = std::uint64_t(ts.tv_sec) * 1'000'000'000u + std::uint64_t(ts.tv_nsec);
    if (last_ns_ == 0) last_ns_ = now;
    const std::uint64_t earned = (now - last_ns_) * rate_ / 1'000'000'000u;
    if (earned == 0) return;
    tokens_ = std::min(capacity_, tokens_ + earned);
    // Keep the remainder: a steady sender gets exactly `rate` per second.
    last_ns_ += earned * 1'000'000'000u / rate_;
  }

  std::uint32_t rate_ = 0;
  std::uint64_t capacity_ = 1;
  std::uint64_t tokens_ = 1;
  std::uint64_t last_ns_ = 0;
};

// The flood bucket's size for `rate`: a tenth of a second's worth, at least 64.
constexpr std::uint64_t flood_bucket(std::uint32_t rate) noexcept {
  return std::max<std::uint64_t>(rate / 10, 64);
}

}  // namespace xdpvhost::dataplane

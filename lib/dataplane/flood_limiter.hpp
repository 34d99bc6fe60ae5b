#pragma once
// A token bucket for the broadcast and multicast frames one guest sends:
// `rate` frames per second, holding a tenth of a second's worth (at least
// 64), so a guest that floods costs the others on the switch (and the
// node's flood path) a bounded number of copies. Owned by the port's
// service thread. The clock is read only when the bucket runs empty.

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace xdpvhost::dataplane {

class FloodLimiter {
 public:
  // 0: no limit.
  void set_rate(std::uint32_t rate) noexcept {
    rate_ = rate;
    capacity_ = std::max<std::uint64_t>(rate / 10, 64);
    tokens_ = capacity_;
    last_ns_ = 0;
  }

  // Whether `frames` more may go now (a GSO frame: its segments, each a
  // copy to every guest without GSO; at most a full bucket's worth).
  bool allow(std::uint64_t frames = 1) noexcept {
    if (rate_ == 0) return true;
    const std::uint64_t cost = std::min(frames, capacity_);
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
  std::uint64_t capacity_ = 64;
  std::uint64_t tokens_ = 64;
  std::uint64_t last_ns_ = 0;
};

}  // namespace xdpvhost::dataplane

#pragma once
// The /metrics body, rendered at most once per max_age: every request within
// it (other scrapers, a client's pipelined GETs) is answered with the same
// body. A render walks every port and uplink on the control thread, the
// thread that also serves every tenant's vhost-user messages, so how often
// it runs is not up to the clients.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace xdpvhost::daemon::metrics {

class ExpositionCache {
 public:
  using Clock = std::chrono::steady_clock;

  ExpositionCache(std::function<std::string()> render, std::chrono::milliseconds max_age,
                  std::function<Clock::time_point()> now = Clock::now)
      : render_(std::move(render)), max_age_(max_age), now_(std::move(now)) {}

  const std::string& body() {
    const Clock::time_point t = now_();
    if (renders_ == 0 || t - rendered_at_ >= max_age_) {
      body_ = render_();
      rendered_at_ = t;
      ++renders_;
    }
    return body_;
  }

  std::uint64_t renders() const noexcept { return renders_; }

 private:
  std::function<std::string()> render_;
  std::chrono::milliseconds max_age_;
  std::function<Clock::time_point()> now_;
  std::string body_;
  Clock::time_point rendered_at_{};
  std::uint64_t renders_ = 0;
};

}  // namespace xdpvhost::daemon::metrics

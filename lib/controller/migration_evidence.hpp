#pragma once
// What a port's frontend has shown of a live migration, for the MAC
// hand-over between two learn-move ports of one VM (Daemon's arbiter). Both
// signals come from the frontend (QEMU), never from the guest:
//   arrived          the rings of this session started where a running guest
//                    left them (a ring's first start at a non-zero avail
//                    index: an incoming migration, or a paused VM resumed;
//                    a booted or reset guest starts every ring at 0), or
//                    SEND_RARP came while the rings ran
//   left_logging     every ring is stopped and the last stop came while dirty
//                    logging was on (the source of a migration stops its
//                    rings before it turns logging off; a reboot or a driver
//                    reload stops them without)
// A session runs from the first ring's start to the last ring's stop; a
// ring handed over again within it (features, memory table) is not a new
// start.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace xdpvhost::controller {

class MigrationEvidence {
 public:
  explicit MigrationEvidence(std::uint32_t vrings) : started_(vrings, false) {}

  void ring_started(std::uint32_t vring, std::uint16_t base) noexcept {
    if (running_ == 0) {  // a new session
      std::fill(started_.begin(), started_.end(), false);
      arrived_ = false;
      left_logging_ = false;
    }
    ++running_;
    if (vring < started_.size() && !started_[vring]) {
      started_[vring] = true;
      if (base != 0) arrived_ = true;
    }
  }

  void ring_stopped(bool logging) noexcept {
    if (running_ == 0) return;
    if (--running_ == 0) left_logging_ = logging;
  }

  void announced() noexcept {
    if (running_ != 0) arrived_ = true;
  }

  bool arrived() const noexcept { return running_ != 0 && arrived_; }
  bool left_logging() const noexcept { return running_ == 0 && left_logging_; }

 private:
  std::vector<bool> started_;  // per vring: started in this session
  std::uint32_t running_ = 0;
  bool arrived_ = false;
  bool left_logging_ = false;
};

}  // namespace xdpvhost::controller

#pragma once
// Placement by measured load: queues move between service threads so that
// no thread is left with more work than a core does while another idles.
//
// Every rebalance_interval_s the control thread reads what each service
// thread and each queue (a guest port's queue group, an uplink's NIC queue)
// was busy since its last look (ThreadCounters::busy_ns; per queue its polls,
// PortCounters::busy_ns, and the frames put into it, tx_packets:
// dataplane::queue_loads), asks dataplane::plan_move which one queue to move
// (rebalance_threshold_pct, rebalance_margin_pct), and moves it with
// Dataplane::move: quiesced on the old thread, handed over, resumed there,
// no frame lost, sent twice or reordered. At most one move per interval,
// each logged and counted by outcome; the next interval is measured from
// the end of the move. rebalance: off leaves every queue where it was
// placed (queue.move still moves one by hand).
//
// Runs on the control thread; a look reads two counters per queue and
// thread and allocates a few vectors, nothing on the datapath.

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataplane/dataplane.hpp"

namespace xdpvhost::controller {

class Rebalancer {
 public:
  Rebalancer(boost::asio::io_context& io, dataplane::Dataplane& dataplane);
  Rebalancer(const Rebalancer&) = delete;
  Rebalancer& operator=(const Rebalancer&) = delete;

  // Follows the dataplane's tunables: looks every rebalance_interval_s from
  // now, or not at all when rebalance is off. Call again after they
  // changed; an unchanged mode and interval keep the running measurement.
  void follow_tunables();
  void stop();

  // One look now, over the time since the last one (or since
  // follow_tunables started it): the move made or tried, if any.
  std::optional<dataplane::Dataplane::Move> look();

  std::uint64_t looks() const noexcept { return looks_; }
  std::uint64_t moves(dataplane::MoveOutcome outcome) const noexcept {
    return moves_[static_cast<std::size_t>(outcome)];
  }
  // Each thread's load at the last look (a share of a core; empty before it).
  const std::vector<double>& thread_loads() const noexcept { return thread_loads_; }
  // The last move made or tried.
  struct LastMove {
    std::string queue;  // "port vm1, queue group id 7", "uplink queue up0:q0"
    std::uint16_t from = 0, to = 0;
    dataplane::MoveOutcome outcome = dataplane::MoveOutcome::kMoved;
    double busiest_before = 0, busiest_after = 0;  // measured, and expected after it
    std::chrono::steady_clock::time_point at;
  };
  const std::optional<LastMove>& last_move() const noexcept { return last_move_; }

 private:
  void arm();
  // What each thread and queue was busy until now: the start of the next
  // interval.
  void take_baseline();

  boost::asio::steady_timer timer_;
  dataplane::Dataplane& dataplane_;
  std::chrono::seconds interval_{0};  // 0: not looking (rebalance: off)
  std::chrono::steady_clock::time_point since_;
  struct QueueCounts {
    std::uint64_t busy_ns = 0, frames_in = 0;
  };
  std::vector<std::uint64_t> thread_busy_ns_;                    // by thread, at since_
  std::unordered_map<std::uint32_t, QueueCounts> queue_counts_;  // by port id, at since_
  std::uint64_t looks_ = 0;
  std::vector<double> thread_loads_;
  std::optional<LastMove> last_move_;
  std::array<std::uint64_t, static_cast<std::size_t>(dataplane::MoveOutcome::kCount)> moves_{};
};

}  // namespace xdpvhost::controller

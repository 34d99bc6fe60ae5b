#include "controller/rebalancer.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

#include "dataplane/rebalance_plan.hpp"

namespace xdpvhost::controller {

namespace {

using dataplane::MoveOutcome;

// What the log calls a queue: "port vm1, queue group id 7", "uplink queue up0:q0".
std::string queue_name(const dataplane::Port& port) {
  if (port.kind() == dataplane::PortKind::kUplink) return "uplink queue " + port.name();
  return "port " + port.name() + ", queue group id " + std::to_string(port.id());
}

long percent(double load) {
  return std::lround(load * 100);
}

}  // namespace

Rebalancer::Rebalancer(boost::asio::io_context& io, dataplane::Dataplane& dataplane)
    : timer_(io), dataplane_(dataplane) {}

void Rebalancer::follow_tunables() {
  const auto& t = dataplane_.tunables();
  const std::chrono::seconds interval{
      t.rebalance == dataplane::RebalanceMode::kOff ? 0 : t.rebalance_interval_s};
  if (interval == interval_) return;
  interval_ = interval;
  timer_.cancel();
  if (interval_.count() == 0) return;
  take_baseline();
  arm();
}

void Rebalancer::stop() {
  interval_ = std::chrono::seconds{0};
  timer_.cancel();
}

void Rebalancer::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    look();
    arm();
  });
}

void Rebalancer::take_baseline() {
  since_ = std::chrono::steady_clock::now();
  thread_busy_ns_.clear();
  for (std::uint16_t t = 0; t < dataplane_.thread_count(); ++t)
    thread_busy_ns_.push_back(dataplane_.thread(t).counters().busy_ns.get());
  queue_counts_.clear();
  for (const auto& p : dataplane_.placements())
    queue_counts_[p.port->id()] = {p.port->counters().busy_ns.get(),
                                   p.port->counters().tx_packets.get()};
}

std::optional<dataplane::Dataplane::Move> Rebalancer::look() {
  ++looks_;
  const auto now = std::chrono::steady_clock::now();
  const double span_ns = std::chrono::duration<double, std::nano>(now - since_).count();
  // What each thread and queue did since the baseline; a queue without one
  // (attached since) counts from 0.
  const std::uint16_t n = dataplane_.thread_count();
  std::vector<std::uint64_t> thread_busy(n, 0);
  std::vector<double> threads(n, 0.0);
  for (std::uint16_t t = 0; t < n; ++t) {
    const std::uint64_t base = t < thread_busy_ns_.size() ? thread_busy_ns_[t] : 0;
    thread_busy[t] = dataplane_.thread(t).counters().busy_ns.get() - base;
    threads[t] = static_cast<double>(thread_busy[t]) / span_ns;
  }
  const auto placements = dataplane_.placements();
  std::vector<dataplane::QueueSample> samples;
  samples.reserve(placements.size());
  for (const auto& p : placements) {
    const auto it = queue_counts_.find(p.port->id());
    const QueueCounts base = it == queue_counts_.end() ? QueueCounts{} : it->second;
    samples.push_back(dataplane::QueueSample{p.thread,
                                             p.port->counters().busy_ns.get() - base.busy_ns,
                                             p.port->counters().tx_packets.get() - base.frames_in});
  }
  const auto queues = dataplane::queue_loads(thread_busy, samples, span_ns);
  thread_loads_ = threads;
  const auto plan =
      span_ns > 0 ? dataplane::plan_move(threads, queues,
                                         dataplane::RebalancePolicy::of(dataplane_.tunables()))
                  : std::nullopt;
  if (!plan) {
    take_baseline();
    return std::nullopt;
  }

  dataplane::Port& port = *placements[plan->queue].port;
  const auto move = dataplane_.move(port, plan->to);
  ++moves_[static_cast<std::size_t>(move.outcome)];
  const std::string name = queue_name(port);
  last_move_ = LastMove{name,
                        plan->from,
                        plan->to,
                        move.outcome,
                        plan->busiest_before,
                        plan->busiest_after,
                        std::chrono::steady_clock::now()};
  const auto over_s = std::chrono::duration<double>(now - since_).count();
  if (move.outcome == MoveOutcome::kMoved)
    spdlog::info(
        "rebalance: {}: moved from service thread {} to {} in {} us ({}% of a core): thread {} "
        "was {}% busy over the last {:.1f} s, thread {} {}%; the busiest now expected at {}%",
        name, plan->from, plan->to, move.took.count(), percent(queues[plan->queue].load),
        plan->from, percent(plan->busiest_before), over_s, plan->to, percent(threads[plan->to]),
        percent(plan->busiest_after));
  else
    spdlog::warn("rebalance: {}: not moved from service thread {} to {} ({}, after {} us)", name,
                 plan->from, plan->to, to_string(move.outcome), move.took.count());
  take_baseline();  // the next interval is measured from after the move
  return move;
}

}  // namespace xdpvhost::controller

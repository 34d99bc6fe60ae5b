#include "daemon_metrics.hpp"

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "counter_families.hpp"
#include "dataplane/drop_reason.hpp"
#include "control/state_json.hpp"
#include "control/stats_snapshot.hpp"

namespace xdpvhost::daemon::metrics {

namespace {

using prometheus::MetricType;

constexpr int kProtocolVersion = 1;

struct PortView {
  const PortConfig* config;
  const controller::GuestPortController* port;
  PortStatsSnapshot counters;
};

std::vector<PortView> ports_of(const Daemon& daemon) {
  std::vector<PortView> views;
  for (const auto& p : daemon.config().ports)
    if (const auto* c = daemon.find_port(p.name))
      views.push_back({&p, c, PortStatsSnapshot::of(*c)});
  return views;
}

// Every port series is labelled with the port and who it serves (namespace,
// vm, claim; "" when not known, which Prometheus treats as absent).
std::vector<Label> owner_labels(const PortView& p) {
  static const controller::PortOwner kNobody;
  const controller::PortOwner& o = p.config->owner ? *p.config->owner : kNobody;
  return {{"port", p.config->name}, {"namespace", o.ns}, {"vm", o.vm}, {"claim", o.claim}};
}

// 1 for the current state, 0 for the others.
std::uint64_t is(std::string_view current, std::string_view state) {
  return current == state ? 1 : 0;
}

}  // namespace

void add_build_families(Families& out, const Daemon& daemon) {
  {
    auto f = make_family("xdpvhost_build_info", MetricType::Gauge,
                         "Version of xdpvhostd and of its control protocol (value 1).");
    const std::string protocol = std::to_string(kProtocolVersion);
    add_info(f, {{"version", daemon.version()}, {"protocol", protocol}});
    out.push_back(std::move(f));
  }
  {
    auto f = make_family("xdpvhost_start_time_seconds", MetricType::Gauge,
                         "When xdpvhostd started, in seconds since the Unix epoch.");
    const auto running = std::chrono::steady_clock::now() - daemon.started_at();
    const auto started = std::chrono::system_clock::now() -
                         std::chrono::duration_cast<std::chrono::system_clock::duration>(running);
    add_sample(f, {}, std::chrono::duration<double>(started.time_since_epoch()).count());
    out.push_back(std::move(f));
  }
}

void add_port_families(Families& out, const Daemon& daemon, Breakdowns listed) {
  const auto ports = ports_of(daemon);

  {
    auto f = make_family(
        "xdpvhost_port_info", MetricType::Gauge,
        "Guest ports: mode, MAC and where it came from (mac_source config, learned or none), "
        "mac_policy, uplink, service thread and owner (value 1).");
    for (const auto& p : ports) {
      const std::string mac = p.port->mac() ? p.port->mac()->to_string() : "",
                        thread = std::to_string(p.port->thread());
      std::vector<Label> labels = owner_labels(p);
      labels.insert(labels.end(), {{"mode", vhost::to_string(p.config->mode)},
                                   {"mac", mac},
                                   {"mac_source", controller::to_string(p.port->mac_source())},
                                   {"mac_policy", dataplane::to_string(p.config->mac_policy)},
                                   {"uplink", p.config->uplink ? *p.config->uplink : ""},
                                   {"thread", thread}});
      add_info(f, LabelSpan(labels));
    }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family(
        "xdpvhost_port_state", MetricType::Gauge,
        "State of a guest port, 1 for the current one: waiting (no frontend), connected "
        "(being set up), running (traffic flows), broken (a queue was malformed, or its guest "
        "memory "
        "refused).");
    for (const auto& p : ports) {
      const std::string state = port_state(*p.port);
      for (const char* s : {"waiting", "connected", "running", "broken"}) {
        std::vector<Label> labels = owner_labels(p);
        labels.emplace_back("state", s);
        add_sample(f, LabelSpan(labels), is(state, s));
      }
    }
    out.push_back(std::move(f));
  }

  std::vector<CounterRow<dataplane::kPortCounters.size()>> rows;
  std::vector<std::vector<Label>> labels;
  std::vector<dataplane::CounterValues<dataplane::kDropReasons>> drops;
  for (const auto& p : ports) {
    labels.push_back(owner_labels(p));
    rows.push_back({labels.back(), p.counters.counters});
    drops.push_back(p.counters.drops);
  }
  add_counter_families(out, "xdpvhost_port_", dataplane::kPortCounters, rows);
  add_drop_family(out, "xdpvhost_port_", labels, drops, listed);
  {
    // Per queue pair: the port's labels and queue="N".
    std::vector<std::string> pair_names;
    for (const auto& p : ports)
      for (const auto& q : p.counters.pairs) pair_names.push_back(std::to_string(q.pair));
    std::vector<CounterRow<dataplane::kQueuePairCounters.size()>> pair_rows;
    std::size_t name = 0;
    for (std::size_t r = 0; r < ports.size(); ++r)
      for (const auto& q : ports[r].counters.pairs) {
        std::vector<Label> l = labels[r];
        l.emplace_back(dataplane::kQueuePairs.label, pair_names[name++]);
        pair_rows.push_back({std::move(l), q.counters});
      }
    add_counter_families(out, "xdpvhost_port_", dataplane::kQueuePairCounters, pair_rows,
                         dataplane::PortScope::kGuest, listed);
  }
  std::vector<dataplane::CounterValues<net::kOffloadErrorCount>> offload_refused;
  std::vector<dataplane::CounterValues<dataplane::kMacRefusals>> mac_refused;
  for (const auto& p : ports) {
    offload_refused.push_back(p.counters.offload_refused);
    mac_refused.push_back(p.counters.mac_refused);
  }
  add_reason_family(
      out, "xdpvhost_port_", dataplane::kOffloadRefused, labels, offload_refused, 1,
      [](std::size_t i) { return net::counter_name(static_cast<net::OffloadError>(i)); }, listed);
  add_reason_family(
      out, "xdpvhost_port_", dataplane::kMacRefused, labels, mac_refused, 0,
      [](std::size_t i) { return dataplane::to_string(static_cast<dataplane::MacRefusal>(i)); },
      listed);
}

void add_thread_families(Families& out, Daemon& daemon) {
  auto& dp = daemon.dataplane();
  const std::uint16_t n = dp.thread_count();
  std::vector<ThreadStatsSnapshot> counters;
  std::vector<std::string> index;
  for (std::uint16_t t = 0; t < n; ++t) {
    counters.push_back(ThreadStatsSnapshot::of(dp.thread(t).counters()));
    index.push_back(std::to_string(t));
  }

  {
    auto f = make_family(
        "xdpvhost_thread_info", MetricType::Gauge,
        "Service threads and the CPU each is pinned to (\"\" when not pinned; value 1).");
    for (std::uint16_t t = 0; t < n; ++t) {
      const auto cpu = dp.thread(t).cpu();
      const std::string cpu_text = cpu ? std::to_string(*cpu) : "";
      add_info(f, {{"thread", index[t]}, {"cpu", cpu_text}});
    }
    out.push_back(std::move(f));
  }
  {
    auto f = make_family(
        "xdpvhost_thread_state", MetricType::Gauge,
        "State of a service thread, 1 for the current one: busy (the last burst found work), "
        "polling (busy polling), sleeping (waiting in epoll), stalled (a control command did not "
        "run within 5 s; its ports are failed).");
    for (std::uint16_t t = 0; t < n; ++t) {
      const std::string state = dp.thread(t).reported_state();
      for (const char* s : dataplane::ServiceThread::kReportedStates)
        add_sample(f, {{"thread", index[t]}, {"state", s}}, is(state, s));
    }
    out.push_back(std::move(f));
  }
  {
    auto f = make_family(
        "xdpvhost_thread_heartbeat_misses_total", MetricType::Counter,
        "Times a service thread, awake, went 1 s without a poll round (a round stuck, or no CPU "
        "for it); each silence counts once.");
    for (std::uint16_t t = 0; t < n; ++t)
      add_sample(f, {{"thread", index[t]}}, dp.thread(t).heartbeat().misses());
    out.push_back(std::move(f));
  }
  {
    auto f = make_family("xdpvhost_thread_longest_silence_seconds", MetricType::Gauge,
                         "The longest a service thread has gone, awake, without a poll round "
                         "(checked every 100 ms).");
    for (std::uint16_t t = 0; t < n; ++t)
      add_sample(f, {{"thread", index[t]}},
                 std::chrono::duration<double>(dp.thread(t).heartbeat().longest_silence()).count());
    out.push_back(std::move(f));
  }
  {
    // Moves by outcome: all of them (Dataplane), and the rebalancer's.
    const auto& rebalancer = daemon.rebalancer();
    const auto moves = [&](const char* family, const char* help, auto&& count) {
      auto f = make_family(family, MetricType::Counter, help);
      for (const auto& [outcome, name] : dataplane::kMoveOutcomeNames)
        add_sample(f, {{"outcome", name}}, count(outcome));
      out.push_back(std::move(f));
    };
    moves("xdpvhost_queue_moves_total",
          "Queues moved between service threads (queue.move and the rebalancer), by outcome: "
          "moved, already_there, not_settled and thread_stalled (it stayed where it was).",
          [&](dataplane::MoveOutcome o) { return dp.moves(o); });
    moves("xdpvhost_rebalance_moves_total",
          "Queues the rebalancer moved (or tried to) because the busiest service thread was "
          "above rebalance_threshold_pct, by outcome as xdpvhost_queue_moves_total.",
          [&](dataplane::MoveOutcome o) { return rebalancer.moves(o); });
    auto looks = make_family("xdpvhost_rebalance_looks_total", MetricType::Counter,
                             "Times the rebalancer measured the service threads' load "
                             "(every rebalance_interval_s while rebalance is auto).");
    add_sample(looks, {}, rebalancer.looks());
    out.push_back(std::move(looks));
  }
  {
    auto f = make_family("xdpvhost_thread_busy_poll_microseconds", MetricType::Gauge,
                         "busy_poll_us in effect on the service thread.");
    for (std::uint16_t t = 0; t < n; ++t)
      add_sample(f, {{"thread", index[t]}}, std::uint64_t{dp.thread(t).busy_poll_us()});
    out.push_back(std::move(f));
  }

  std::vector<CounterRow<dataplane::kThreadCounters.size()>> rows;
  for (std::uint16_t t = 0; t < n; ++t)
    rows.push_back({{{"thread", index[t]}}, counters[t].counters});
  add_counter_families(out, "xdpvhost_thread_", dataplane::kThreadCounters, rows);

  {
    auto f = make_family("xdpvhost_thread_burst_frames", MetricType::Histogram,
                         "Frames moved per poll round that found work.");
    std::array<std::uint64_t, dataplane::BurstHistogram::kBuckets - 1> bounds{};
    for (std::size_t i = 0; i < bounds.size(); ++i)
      bounds[i] = dataplane::BurstHistogram::upper_bound(i);
    for (std::uint16_t t = 0; t < n; ++t)
      add_histogram(f, {{"thread", index[t]}}, bounds, counters[t].bursts,
                    counters[t].burst_frames);
    out.push_back(std::move(f));
  }
}

}  // namespace xdpvhost::daemon::metrics

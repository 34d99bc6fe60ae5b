#include "daemon_metrics.hpp"

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "dataplane/drop_reason.hpp"
#include "state_json.hpp"
#include "stats_snapshot.hpp"

namespace xdpvhost::daemon::metrics {

namespace {

using prometheus::MetricType;

constexpr int kProtocolVersion = 1;

struct PortView {
  const PortConfig* config;
  const dataplane::GuestPortController* port;
  PortStatsSnapshot counters;
};

std::vector<PortView> ports_of(const Daemon& daemon) {
  std::vector<PortView> views;
  for (const auto& p : daemon.config().ports)
    if (const auto* c = daemon.find_port(p.name))
      views.push_back({&p, c, PortStatsSnapshot::of(c->port().counters())});
  return views;
}

const char* thread_state(dataplane::ServiceThread::State s) {
  using S = dataplane::ServiceThread::State;
  switch (s) {
    case S::kPolling:
      return "polling";
    case S::kSleeping:
    case S::kStopped:
      return "sleeping";
    case S::kStarting:
    case S::kBusy:
      return "busy";
  }
  return "busy";
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

void add_port_families(Families& out, const Daemon& daemon) {
  const auto ports = ports_of(daemon);

  {
    auto f = make_family("xdpvhost_port_info", MetricType::Gauge,
                         "Guest ports: socket, mode, MAC, uplink and service thread (value 1).");
    for (const auto& p : ports) {
      const std::string mac = format_mac(p.config->mac), thread = std::to_string(p.port->thread());
      add_info(f, {{"port", p.config->name},
                   {"socket", p.config->socket},
                   {"mode", to_string(p.config->mode)},
                   {"mac", mac},
                   {"uplink", p.config->uplink.value_or("")},
                   {"thread", thread}});
    }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family(
        "xdpvhost_port_state", MetricType::Gauge,
        "State of a guest port, 1 for the current one: waiting (no frontend), connected "
        "(being set up), running (traffic flows), broken (a queue was malformed).");
    for (const auto& p : ports) {
      const std::string state = port_state(*p.port);
      for (const char* s : {"waiting", "connected", "running", "broken"})
        add_sample(f, {{"port", p.config->name}, {"state", s}}, is(state, s));
    }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family(
        "xdpvhost_port_packets_total", MetricType::Counter,
        "Frames per guest port, seen from the switch: rx taken from the guest's transmit "
        "queues, tx delivered into its receive queues.");
    for (const auto& p : ports) {
      add_sample(f, {{"port", p.config->name}, {"direction", "rx"}}, p.counters.rx_packets);
      add_sample(f, {{"port", p.config->name}, {"direction", "tx"}}, p.counters.tx_packets);
    }
    out.push_back(std::move(f));
  }
  {
    auto f =
        make_family("xdpvhost_port_bytes_total", MetricType::Counter,
                    "Bytes per guest port (frames without the virtio-net header), directions as "
                    "xdpvhost_port_packets_total.");
    for (const auto& p : ports) {
      add_sample(f, {{"port", p.config->name}, {"direction", "rx"}}, p.counters.rx_bytes);
      add_sample(f, {{"port", p.config->name}, {"direction", "tx"}}, p.counters.tx_bytes);
    }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family(
        "xdpvhost_port_drops_total", MetricType::Counter,
        "Frames dropped at a guest port, by reason (every reason is listed, zero or not).");
    for (const auto& p : ports)
      for (std::size_t r = 0; r < p.counters.drops.size(); ++r)
        add_sample(f,
                   {{"port", p.config->name},
                    {"reason", dataplane::to_string(static_cast<dataplane::DropReason>(r))}},
                   p.counters.drops[r]);
    out.push_back(std::move(f));
  }

  struct Simple {
    const char* name;
    const char* help;
    std::uint64_t PortStatsSnapshot::*field;
  };
  for (const Simple& s : {
           Simple{"xdpvhost_port_kicks_total",
                  "Guest notifications (kick eventfd) the daemon received.",
                  &PortStatsSnapshot::kicks},
           Simple{"xdpvhost_port_interrupts_total", "Guest interrupts (call eventfd) sent.",
                  &PortStatsSnapshot::interrupts},
           Simple{"xdpvhost_port_interrupts_suppressed_total",
                  "Interrupts not sent: coalesced by signal_batch or suppressed by the guest "
                  "(EVENT_IDX, NO_INTERRUPT).",
                  &PortStatsSnapshot::interrupts_suppressed},
           Simple{"xdpvhost_port_queue_errors_total",
                  "Virtqueues found malformed and stopped (see port.get for the error).",
                  &PortStatsSnapshot::queue_errors},
       }) {
    auto f = make_family(s.name, MetricType::Counter, s.help);
    for (const auto& p : ports) add_sample(f, {{"port", p.config->name}}, p.counters.*(s.field));
    out.push_back(std::move(f));
  }
}

void add_thread_families(Families& out, Daemon& daemon) {
  auto& dp = daemon.dataplane();
  const std::uint16_t n = dp.thread_count();
  std::vector<ThreadStatsSnapshot> counters;
  std::vector<std::uint64_t> sums, commands, port_gone;
  std::vector<std::string> index;
  for (std::uint16_t t = 0; t < n; ++t) {
    const auto& c = dp.thread(t).counters();
    counters.push_back(ThreadStatsSnapshot::of(c));
    sums.push_back(c.bursts.sum.get());
    commands.push_back(c.commands.get());
    port_gone.push_back(c.dropped_port_gone.get());
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
        "polling (busy polling), sleeping (waiting in epoll).");
    for (std::uint16_t t = 0; t < n; ++t) {
      const std::string state = thread_state(dp.thread(t).state());
      for (const char* s : {"busy", "polling", "sleeping"})
        add_sample(f, {{"thread", index[t]}, {"state", s}}, is(state, s));
    }
    out.push_back(std::move(f));
  }
  {
    auto f = make_family("xdpvhost_thread_busy_poll_microseconds", MetricType::Gauge,
                         "busy_poll_us in effect on the service thread.");
    for (std::uint16_t t = 0; t < n; ++t)
      add_sample(f, {{"thread", index[t]}}, std::uint64_t{dp.thread(t).busy_poll_us()});
    out.push_back(std::move(f));
  }

  {
    auto f =
        make_family("xdpvhost_thread_iterations_total", MetricType::Counter,
                    "Poll rounds of a service thread: result work (moved frames) or empty (busy "
                    "polling found nothing).");
    for (std::uint16_t t = 0; t < n; ++t) {
      add_sample(f, {{"thread", index[t]}, {"result", "work"}}, counters[t].busy_iterations);
      add_sample(f, {{"thread", index[t]}, {"result", "empty"}}, counters[t].empty_iterations);
    }
    out.push_back(std::move(f));
  }
  struct PerThread {
    const char* name;
    const char* help;
    const char* reason;  // a reason label, or nullptr
    const std::vector<std::uint64_t>* values;
  };
  std::vector<std::uint64_t> sleeps, wakeups;
  for (const auto& c : counters) {
    sleeps.push_back(c.sleeps);
    wakeups.push_back(c.wakeups);
  }
  for (const PerThread& s : {
           PerThread{"xdpvhost_thread_sleeps_total", "Times a service thread blocked in epoll.",
                     nullptr, &sleeps},
           PerThread{"xdpvhost_thread_wakeups_total", "Times a service thread woke from epoll.",
                     nullptr, &wakeups},
           PerThread{"xdpvhost_thread_commands_total",
                     "Control commands a service thread executed (ring starts and stops, port "
                     "moves, tunables).",
                     nullptr, &commands},
           PerThread{"xdpvhost_thread_drops_total",
                     "Frames a service thread dropped outside any port, by reason (port_gone: "
                     "queued for a port removed meanwhile).",
                     "port_gone", &port_gone},
       }) {
    auto f = make_family(s.name, MetricType::Counter, s.help);
    for (std::uint16_t t = 0; t < n; ++t) {
      if (s.reason != nullptr)
        add_sample(f, {{"thread", index[t]}, {"reason", s.reason}}, (*s.values)[t]);
      else
        add_sample(f, {{"thread", index[t]}}, (*s.values)[t]);
    }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family("xdpvhost_thread_burst_frames", MetricType::Histogram,
                         "Frames moved per poll round that found work.");
    std::array<std::uint64_t, dataplane::BurstHistogram::kBuckets - 1> bounds{};
    for (std::size_t i = 0; i < bounds.size(); ++i)
      bounds[i] = dataplane::BurstHistogram::upper_bound(i);
    for (std::uint16_t t = 0; t < n; ++t)
      add_histogram(f, {{"thread", index[t]}}, bounds, counters[t].bursts, sums[t]);
    out.push_back(std::move(f));
  }
}

}  // namespace xdpvhost::daemon::metrics

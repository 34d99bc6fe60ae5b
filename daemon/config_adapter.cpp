#include "config_adapter.hpp"

namespace xdpvhost::daemon {

dataplane::Tunables to_dataplane(const Tunables& t) {
  dataplane::Tunables d;
  d.busy_poll_us = t.busy_poll_us;
  d.signal_batch = t.signal_batch;
  d.rx_burst = t.rx_burst;
  d.tx_burst = t.tx_burst;
  d.tx_inflight_max = t.tx_inflight_max;
  d.napi_busy_poll = t.napi_busy_poll;
  d.busy_poll_budget = t.busy_poll_budget;
  return d;
}

dataplane::PortTunables to_dataplane_port(const Tunables& resolved) {
  return dataplane::PortTunables{resolved.signal_batch, resolved.rx_burst, resolved.tx_burst};
}

dataplane::Dataplane::Options dataplane_options(const Config& config) {
  dataplane::Dataplane::Options o;
  o.threads = static_cast<std::uint16_t>(config.threads.count);
  for (auto cpu : config.threads.cpus) o.cpus.push_back(static_cast<int>(cpu));
  o.tunables = to_dataplane(config.tunables);
  return o;
}

dataplane::GuestPortConfig guest_port_config(const Config& config, const PortConfig& port,
                                             std::uint32_t uplink_id) {
  dataplane::GuestPortConfig g;
  g.name = port.name;
  g.socket = port.socket;
  g.mode = port.mode == PortMode::kClient ? vhost::SocketEndpoint::Mode::kClient
                                          : vhost::SocketEndpoint::Mode::kServer;
  g.mac.bytes = port.mac;
  g.uplink = uplink_id;
  g.queue_pairs = port.queues;
  g.mtu = port.mtu;
  g.tunables = to_dataplane_port(resolve(config.tunables, port.tunables));
  if (port.thread) g.thread = static_cast<std::uint16_t>(*port.thread);
  return g;
}

}  // namespace xdpvhost::daemon

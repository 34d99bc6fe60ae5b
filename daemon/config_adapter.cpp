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

namespace xdpvhost::daemon {

dataplane::UplinkConfig uplink_config(const Config& config, const UplinkConfig& uplink,
                                      std::uint32_t id) {
  dataplane::UplinkConfig u;
  u.name = uplink.name;
  u.id = id;
  u.interface = uplink.interface;
  u.queues = uplink.queues;
  switch (uplink.bind) {
    case BindMode::kAuto:
      u.bind = xsk::BindMode::kAuto;
      break;
    case BindMode::kZerocopy:
      u.bind = xsk::BindMode::kZeroCopy;
      break;
    case BindMode::kCopy:
      u.bind = xsk::BindMode::kCopy;
      break;
  }
  u.frame_size = uplink.frame_size;
  u.ring_size = uplink.ring_size;
  if (uplink.thread) u.thread = static_cast<std::uint16_t>(*uplink.thread);
  u.tunables = to_dataplane(resolve(config.tunables, uplink.tunables));
  if (config.bpf_object) u.bpf_object = *config.bpf_object;
  return u;
}

}  // namespace xdpvhost::daemon

#include "controller/guest_port_controller.hpp"

namespace xdpvhost::controller {

using dataplane::ServiceThread;

GuestPortController::GuestPortController(Dataplane& dataplane, boost::asio::io_context& io,
                                         PortConfig config, std::uint32_t uplink_id,
                                         const PortTunables& tunables)
    : dataplane_(dataplane),
      config_(std::move(config)),
      thread_(config_.thread.value_or(dataplane.least_loaded_thread())),
      port_(std::make_unique<GuestPort>(dataplane.allocate_port_id(), config_.name, config_.mac,
                                        uplink_id, GuestPort::Options{config_.mtu, tunables})),
      device_(vhost::DeviceOptions{config_.queue_pairs, true}, *this) {
  vhost::SocketEndpoint::Options options;
  options.name = config_.name;
  options.path = config_.socket;
  options.mode = config_.mode;
  endpoint_ = std::make_unique<vhost::SocketEndpoint>(io, options, device_);
}

GuestPortController::~GuestPortController() {
  endpoint_->stop();  // the device forgets the session: every ring stops
  device_.disconnect();
  if (attached_) dataplane_.detach(*port_);
}

bool GuestPortController::start(std::string& error) {
  if (thread_ >= dataplane_.thread_count()) {
    error = "service thread " + std::to_string(thread_) + " does not exist";
    return false;
  }
  dataplane_.attach(*port_, thread_);
  attached_ = true;
  if (!endpoint_->start(error)) {
    dataplane_.detach(*port_);
    attached_ = false;
    return false;
  }
  return true;
}

void GuestPortController::set_tunables(const PortTunables& t) {
  GuestPort* port = port_.get();
  dataplane_.thread(thread_).call([port, t] { port->set_tunables(t); });
}

void GuestPortController::start_queue(vhost::QueueStart start) {
  GuestPort* port = port_.get();
  ServiceThread& thread = dataplane_.thread(thread_);
  thread.call([&] {
    port->start_queue(std::move(start));
    thread.wait_fds_changed();
  });
}

std::uint16_t GuestPortController::stop_queue(std::uint32_t vring) {
  GuestPort* port = port_.get();
  ServiceThread& thread = dataplane_.thread(thread_);
  return thread.call([&] {
    const std::uint16_t base = port->stop_queue(vring);
    thread.wait_fds_changed();
    return base;
  });
}

void GuestPortController::set_mtu(std::uint32_t mtu) {
  GuestPort* port = port_.get();
  dataplane_.thread(thread_).call([port, mtu] { port->set_mtu(mtu); });
}

}  // namespace xdpvhost::controller

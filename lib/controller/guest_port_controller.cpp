#include "controller/guest_port_controller.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "sys/log_rate.hpp"

namespace xdpvhost::controller {

using dataplane::ServiceThread;

GuestPortController::GuestPortController(Dataplane& dataplane, boost::asio::io_context& io,
                                         PortConfig config, std::uint32_t uplink_id,
                                         const PortTunables& tunables, MacArbiter arbiter)
    : dataplane_(dataplane),
      io_(io),
      config_(std::move(config)),
      arbiter_(std::move(arbiter)),
      mac_(config_.mac),
      mac_source_(config_.mac ? MacSource::kConfig : MacSource::kNone),
      thread_(config_.thread.value_or(dataplane.least_loaded_thread())),
      port_(std::make_unique<GuestPort>(
          dataplane.allocate_port_id(), config_.name, uplink_id,
          GuestPort::Options{config_.mtu, tunables, config_.mac_policy, config_.mac},
          config_.mac_policy == dataplane::MacPolicy::kFixed
              ? nullptr
              : static_cast<dataplane::MacLearner*>(this))),
      device_(vhost::DeviceOptions{config_.queue_pairs, true}, *this) {
  vhost::SocketEndpoint::Options options;
  options.name = config_.name;
  options.path = config_.socket;
  options.mode = config_.mode;
  endpoint_ = std::make_unique<vhost::SocketEndpoint>(io, options, device_);
}

GuestPortController::~GuestPortController() {
  alive_.reset();     // learning requests still queued on the io_context find nobody
  endpoint_->stop();  // the device forgets the session: every ring stops
  device_.disconnect();
  if (attached_) dataplane_.detach(*port_);
  if (stalled()) {
    // The stalled thread may still hold the port: it is left to it, not freed.
    spdlog::error("port {}: its service thread is stalled; the port's memory is left to it",
                  config_.name);
    (void)port_.release();
  }
}

bool GuestPortController::start(std::string& error) {
  if (thread_ >= dataplane_.thread_count()) {
    error = "service thread " + std::to_string(thread_) + " does not exist";
    return false;
  }
  dataplane_.attach(*port_, thread_, mac_);
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
  ServiceThread* thread = &dataplane_.thread(thread_);
  thread->call([thread, port, start = std::move(start)]() mutable {
    port->start_queue(std::move(start));
    thread->wait_fds_changed();
  });
}

std::uint16_t GuestPortController::stop_queue(std::uint32_t vring) {
  GuestPort* port = port_.get();
  ServiceThread* thread = &dataplane_.thread(thread_);
  return thread->call([thread, port, vring] {
    const std::uint16_t base = port->stop_queue(vring);
    thread->wait_fds_changed();
    return base;
  });
}

void GuestPortController::set_mtu(std::uint32_t mtu) {
  GuestPort* port = port_.get();
  dataplane_.thread(thread_).call([port, mtu] { port->set_mtu(mtu); });
}

bool GuestPortController::announce(const std::array<std::uint8_t, 6>& mac) {
  GuestPort* port = port_.get();
  const net::MacAddress m = net::MacAddress::from(mac.data());
  dataplane_.thread(thread_).call([port, m] { port->announce(m); });
  spdlog::info("port {}: SEND_RARP: announcing {}", config_.name, m.to_string());
  return true;
}

bool GuestPortController::guest_stopped() const noexcept {
  const auto& vrings = device_.vrings();
  return std::none_of(vrings.begin(), vrings.end(),
                      [](const vhost::Device::Vring& v) { return v.running; });
}

void GuestPortController::release_mac() {
  if (!mac_) return;
  GuestPort* port = port_.get();
  dataplane_.set_mac(*port_, std::nullopt);
  spdlog::info("port {}: MAC {} moved away (its guest stopped)", config_.name, mac_->to_string());
  mac_.reset();
  mac_source_ = MacSource::kNone;
  dataplane_.thread(thread_).call([port] { port->mac_released(); });
}

// On the port's service thread: hand the decision to the control thread.
bool GuestPortController::request(const net::MacAddress& mac) noexcept {
  try {
    boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), mac] {
      if (!alive.expired()) decide(mac);
    });
    return true;
  } catch (...) {
    return false;  // asked again with a later frame
  }
}

void GuestPortController::decide(const net::MacAddress& mac) {
  GuestPort* port = port_.get();
  ServiceThread& thread = dataplane_.thread(thread_);
  std::string why;
  if (arbiter_ && !arbiter_(*this, mac, why)) {
    ++refusals_;
    if (sys::worth_logging(refusals_))
      spdlog::warn("port {}: guest sends from {}, which it may not take: {} (refusal #{})",
                   config_.name, mac.to_string(), why, refusals_);
    thread.call([port, mac] { port->mac_refused(mac); });
    return;
  }
  const std::optional<net::MacAddress> old = mac_;
  // The switch first, so frames to the MAC find the port, then the port,
  // which from then on admits only it (learn) or follows the next (learn-move).
  dataplane_.set_mac(*port_, mac);
  mac_ = mac;
  mac_source_ = MacSource::kLearned;
  thread.call([port, mac] { port->mac_learned(mac); });
  spdlog::info("port {}: learned MAC {}{}", config_.name, mac.to_string(),
               old ? " (was " + old->to_string() + ")" : std::string());
}

}  // namespace xdpvhost::controller

#include "controller/guest_port_controller.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "sys/log_rate.hpp"

namespace xdpvhost::controller {

using dataplane::ServiceThread;

GuestPortController::GuestPortController(Dataplane& dataplane, boost::asio::io_context& io,
                                         PortConfig config, std::uint32_t uplink_id,
                                         const PortTunables& tunables, MacArbiter arbiter,
                                         MacAtStart at_start)
    : dataplane_(dataplane),
      io_(io),
      config_(std::move(config)),
      arbiter_(std::move(arbiter)),
      mac_(at_start == MacAtStart::kHolds ? config_.mac : std::nullopt),
      mac_source_(mac_ ? MacSource::kConfig : MacSource::kNone),
      placement_(config_.thread.value_or(dataplane.least_loaded_thread())),
      port_(std::make_unique<GuestPort>(
          dataplane.allocate_port_id(), config_.name, uplink_id,
          GuestPort::Options{config_.mtu, tunables, config_.mac_policy, config_.mac,
                             mac_.has_value() || !config_.mac},
          static_cast<dataplane::MacLearner*>(this))),
      migration_(2 * std::clamp<std::uint32_t>(config_.queue_pairs, 1, GuestPort::kMaxQueuePairs)),
      device_(vhost::DeviceOptions{config_.queue_pairs, true}, *this) {
  // Queue groups beyond the first, on the threads after the first one's.
  const std::uint16_t threads = dataplane.thread_count();
  const std::uint32_t pairs =
      std::clamp<std::uint32_t>(config_.queue_pairs, 1, GuestPort::kMaxQueuePairs);
  const std::uint32_t groups = std::min<std::uint32_t>(pairs, threads);
  for (std::uint32_t g = 1; g < groups; ++g)
    more_groups_.push_back(
        Group{std::make_unique<GuestPort>(
                  dataplane.allocate_port_id(), config_.name, uplink_id,
                  GuestPort::Options{config_.mtu, tunables, config_.mac_policy, config_.mac,
                                     mac_.has_value() || !config_.mac},
                  static_cast<dataplane::MacLearner*>(this)),
              static_cast<std::uint16_t>((placement_ + g) % threads)});
  rx_running_.assign(pairs, false);
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
  std::vector<const ServiceThread*> owners;  // asked again once they let the groups go
  for (std::size_t g = 0; g < group_count(); ++g)
    owners.push_back(&dataplane_.thread(group_thread(g)));
  if (attached_) {
    for (auto& g : more_groups_) dataplane_.detach(*g.port);
    dataplane_.detach(*port_);
    attached_ = false;
  }
  if (std::any_of(owners.begin(), owners.end(), [](const auto* t) { return t->stalled(); })) {
    // A stalled thread may still hold the groups: they are left to it, not freed.
    spdlog::error("port {}: a service thread of it is stalled; the port's memory is left to it",
                  config_.name);
    (void)port_.release();
    for (auto& g : more_groups_) (void)g.port.release();
  }
}

bool GuestPortController::stalled() const {
  for (std::size_t g = 0; g < group_count(); ++g)
    if (dataplane_.thread(group_thread(g)).stalled()) return true;
  return false;
}

bool GuestPortController::broken() const noexcept {
  for (std::size_t g = 0; g < group_count(); ++g)
    if (group(g).broken()) return true;
  return false;
}

template <class Fn>
void GuestPortController::each_group(const Fn& fn) {
  for (std::size_t g = 0; g < group_count(); ++g) {
    GuestPort* port = &group_port(g);
    dataplane_.thread(group_thread(g)).call([port, fn] { fn(*port); });
  }
}

void GuestPortController::publish_rx_groups() {
  if (more_groups_.empty()) return;
  std::vector<const dataplane::Port*> groups;
  for (std::size_t g = 0; g < group_count(); ++g)
    for (std::uint32_t p = static_cast<std::uint32_t>(g); p < rx_running_.size();
         p += static_cast<std::uint32_t>(group_count()))
      if (rx_running_[p]) {
        groups.push_back(&group(g));
        break;
      }
  if (groups == rx_groups_) return;
  rx_groups_ = groups;
  dataplane_.set_rx_groups(*port_, groups);
}

bool GuestPortController::start(std::string& error) {
  if (placement_ >= dataplane_.thread_count()) {
    error = "service thread " + std::to_string(placement_) + " does not exist";
    return false;
  }
  dataplane_.attach(*port_, placement_, mac_);
  for (auto& g : more_groups_) dataplane_.attach_group(*g.port, g.placement, *port_);
  attached_ = true;
  if (!endpoint_->start(error)) {
    for (auto& g : more_groups_) dataplane_.detach(*g.port);
    dataplane_.detach(*port_);
    attached_ = false;
    return false;
  }
  return true;
}

void GuestPortController::set_tunables(const PortTunables& t) {
  each_group([t](GuestPort& port) { port.set_tunables(t); });
}

// The device checked the vring index against the pairs it offers.
void GuestPortController::start_queue(vhost::QueueStart start) {
  const std::uint32_t pair = start.vring / 2;
  const bool rx = (start.vring & 1) == 0;
  const std::size_t g = group_of_pair(pair);
  GuestPort* port = &group_port(g);
  ServiceThread* thread = &dataplane_.thread(group_thread(g));
  migration_.ring_started(start.vring, start.ring.last_avail_idx);
  thread->call([thread, port, start = std::move(start)]() mutable {
    port->start_queue(std::move(start));
    thread->wait_fds_changed();
  });
  if (rx && pair < rx_running_.size()) {
    rx_running_[pair] = true;
    publish_rx_groups();  // after the start: frames find the queue running
  }
}

std::optional<std::uint16_t> GuestPortController::stop_queue(std::uint32_t vring,
                                                             vhost::RingStop why) {
  const std::uint32_t pair = vring / 2;
  if ((vring & 1) == 0 && pair < rx_running_.size()) {
    rx_running_[pair] = false;
    publish_rx_groups();  // before the stop: no new frame is sent to a group without queues
  }
  const std::size_t g = group_of_pair(pair);
  GuestPort* port = &group_port(g);
  ServiceThread* thread = &dataplane_.thread(group_thread(g));
  migration_.ring_stopped(device_.logging());
  // Nothing (call's R{}) if the thread is stalled.
  return thread->call([thread, port, vring, why]() -> std::optional<std::uint16_t> {
    const std::uint16_t base = port->stop_queue(vring, why);
    thread->wait_fds_changed();
    return base;
  });
}

void GuestPortController::set_mtu(std::uint32_t mtu) {
  each_group([mtu](GuestPort& port) { port.set_mtu(mtu); });
}

bool GuestPortController::announce(const std::array<std::uint8_t, 6>& mac) {
  GuestPort* port = port_.get();
  const net::MacAddress m = net::MacAddress::from(mac.data());
  dataplane_.thread(group_thread(0)).call([port, m] { port->announce(m); });
  migration_.announced();
  ++announcements_;
  if (sys::worth_logging(announcements_))
    spdlog::info("port {}: SEND_RARP: announcing {} (#{})", config_.name, m.to_string(),
                 announcements_);
  return true;
}

bool GuestPortController::guest_stopped() const noexcept {
  const auto& vrings = device_.vrings();
  return std::none_of(vrings.begin(), vrings.end(),
                      [](const vhost::Device::Vring& v) { return v.running; });
}

bool GuestPortController::frontend_connected() const noexcept {
  return endpoint_->state() == vhost::SocketEndpoint::State::kConnected;
}

void GuestPortController::release_mac() {
  if (!mac_) return;
  GuestPort* port = port_.get();
  dataplane_.set_mac(*port_, std::nullopt);
  spdlog::info("port {}: MAC {} moved away (its guest stopped)", config_.name, mac_->to_string());
  mac_.reset();
  mac_source_ = MacSource::kNone;
  dataplane_.thread(group_thread(0)).call([port] { port->mac_released(); });
}

// On the port's service thread: hand the decision to the control thread.
bool GuestPortController::request(const net::MacAddress& mac) noexcept {
  try {
    boost::asio::post(io_, [this, alive = alive_token_, mac] {
      if (!alive.expired()) decide(mac);
    });
    return true;
  } catch (...) {
    return false;  // asked again with a later frame
  }
}

void GuestPortController::set_learn_request_rate(const dataplane::LearnRequestRate& rate) {
  each_group([rate](GuestPort& port) { port.set_learn_request_rate(rate); });
}

void GuestPortController::decide(const net::MacAddress& mac) {
  // The decision (a new switch table for every thread, the XDP map and the
  // NIC's filter) is work the guest caused: it is charged to its frontend.
  const sys::TurnCharge charge{endpoint_->budget()};
  std::string why;
  if (const auto refusal = arbiter_ ? arbiter_(*this, mac, why) : std::nullopt) {
    ++refusals_;
    if (sys::worth_logging(refusals_))
      spdlog::warn("port {}: guest sends from {}, which it may not take ({}): {} (refusal #{})",
                   config_.name, mac.to_string(), dataplane::to_string(*refusal), why, refusals_);
    last_refusal_ = MacRefusalRecord{mac, *refusal, why};
    const dataplane::MacRefusal reason = *refusal;
    each_group([mac, reason](GuestPort& port) { port.mac_refused(mac, reason); });
    return;
  }
  const std::optional<net::MacAddress> old = mac_;
  // The switch first, so frames to the MAC find the port, then the port,
  // which from then on admits only it (learn) or follows the next (learn-move).
  dataplane_.set_mac(*port_, mac);
  mac_ = mac;
  mac_source_ =
      config_.mac_policy == dataplane::MacPolicy::kFixed ? MacSource::kConfig : MacSource::kLearned;
  each_group([mac](GuestPort& port) { port.mac_learned(mac); });
  ++learned_;
  if (sys::worth_logging(learned_))
    spdlog::info("port {}: learned MAC {}{} (#{})", config_.name, mac.to_string(),
                 old ? " (was " + old->to_string() + ")" : std::string(), learned_);
}

}  // namespace xdpvhost::controller

#include "controller/uplink_controller.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "net/ethernet.hpp"
#include "sys/enum_names.hpp"
#include "sys/log_rate.hpp"
#include "xsk/umem.hpp"

namespace xdpvhost::controller {

using dataplane::ServiceThread;

namespace {

constexpr sys::EnumNames<LinkState, 3> kLinkStateNames{{
    {LinkState::kUp, "up"},
    {LinkState::kDown, "down"},
    {LinkState::kAbsent, "absent"},
}};
static_assert(sys::in_enum_order(kLinkStateNames, 3));

}  // namespace

const char* to_string(LinkState state) {
  return sys::name_of(kLinkStateNames, state, "absent");
}

UplinkController::UplinkController(Dataplane& dataplane, boost::asio::io_context& io,
                                   UplinkConfig config, std::uint32_t id, const Tunables& tunables,
                                   std::string bpf_object)
    : dataplane_(dataplane),
      io_(io),
      config_(std::move(config)),
      id_(id),
      tunables_(tunables),
      bpf_object_(std::move(bpf_object)),
      stats_timer_(io),
      retry_timer_(io),
      soon_timer_(io) {
  // Until the interface is set up: what the running kernel promises.
  frame_facts_.frame_size = config_.frame_size;
  frame_facts_.ifname = config_.interface;
  frame_facts_.kernel = nic::KernelVersion::running();
  frame_limit_ = nic::uplink_frame_limit(frame_facts_);
}

UplinkController::~UplinkController() {
  alive_.reset();
  stats_timer_.cancel();
  retry_timer_.cancel();
  soon_timer_.cancel();
  if (monitor_wait_) {
    monitor_wait_->cancel();
    monitor_wait_->release();
  }
  if (channels_wait_) {
    channels_wait_->cancel();
    channels_wait_->release();
  }
  teardown();
  std::vector<const ServiceThread*> owners;  // asked again once they let the queues go
  for (const auto& port : ports_) owners.push_back(&dataplane_.owner(*port));
  for (auto& port : ports_) dataplane_.detach(*port);
  for (std::size_t i = 0; i < ports_.size(); ++i)
    if (owners[i]->stalled()) (void)ports_[i].release();  // left to it
}

std::uint32_t UplinkController::max_frame() const {
  std::uint32_t mtu = 1500;
  for (const auto& [name, guest] : guests_) mtu = std::max(mtu, guest.mtu);
  // Never more than the uplink carries (one UMEM frame after the kernel's
  // XDP headroom, or a descriptor chain with multi-buffer): longer frames
  // are dropped (and counted) in XDP, not lost in the socket.
  return std::min(net::max_frame_for_mtu(mtu), frame_limit_.max_frame);
}

bool UplinkController::admits_mtu(std::uint32_t mtu, std::string& why) const {
  const std::uint32_t frame = net::max_frame_for_mtu(mtu);
  if (frame_limit_.fits(frame)) return true;
  why = "mtu " + std::to_string(mtu) + " needs frames of " + std::to_string(frame) +
        " bytes; uplink " + config_.name + " carries at most " +
        std::to_string(frame_limit_.max_frame) + ": " + frame_limit_.reason;
  return false;
}

void UplinkController::update_frame_limit() {
  frame_limit_ = nic::uplink_frame_limit(frame_facts_);
  spdlog::info("uplink {}: frames up to {} bytes{} ({})", config_.name, frame_limit_.max_frame,
               frame_limit_.multi_buffer ? ", multi-buffer" : "", frame_limit_.reason);
  for (const auto& [name, guest] : guests_) report_mtu_above(name, guest.mtu);
}

void UplinkController::report_mtu_above(const std::string& port, std::uint32_t mtu) const {
  std::string why;
  if (!admits_mtu(mtu, why))
    spdlog::error("uplink {}: port {}: {}; its longer frames are dropped as oversize", config_.name,
                  port, why);
}

void UplinkController::add_queue_port(std::uint32_t queue) {
  UplinkQueuePort::Options options;
  options.queue = queue;
  options.max_frame = max_frame();
  options.tunables = tunables_;
  auto port = std::make_unique<UplinkQueuePort>(
      dataplane_.allocate_port_id(), config_.name + ":q" + std::to_string(queue), id_, options);
  dataplane_.attach(*port, config_.thread.value_or(dataplane_.least_loaded_thread()));
  ports_.push_back(std::move(port));
}

bool UplinkController::wanted(std::size_t i) const noexcept {
  return config_.queues || ports_[i]->queue() < nic_queues_;
}

bool UplinkController::start(std::string& error) {
  // Checked once: the service threads do not change while the daemon runs.
  if (config_.thread && *config_.thread >= dataplane_.thread_count()) {
    error = "service thread " + std::to_string(*config_.thread) + " does not exist";
    return false;
  }
  if (config_.queues)
    for (std::uint32_t q : *config_.queues) add_queue_port(q);
  attached_ = true;

  monitor_ = nic::LinkMonitor::open(error);
  if (!monitor_) return false;
  std::vector<nic::LinkEvent> initial;
  monitor_->read_events(initial);  // the current links, as kAdded
  nic::LinkEvent link;
  if (monitor_->lookup(config_.interface, link)) {
    std::string why;
    if (!setup(why)) spdlog::error("uplink {}: {}", config_.name, why);
    set_link_up(link.up);
  } else {
    spdlog::warn("uplink {}: interface {} does not exist (yet); waiting for it", config_.name,
                 config_.interface);
  }
  watch_links();
  if (!config_.queues) {
    std::string why;
    channels_ = nic::ChannelMonitor::open(why);
    if (channels_) {
      watch_channels();
    } else {
      spdlog::info("uplink {}: no channel notifications ({}); RX queue changes are seen every {} s",
                   config_.name, why, kRetryInterval.count());
    }
  }
  poll_program_stats();
  retry_later();
  return true;
}

void UplinkController::watch_channels() {
  if (!channels_wait_) channels_wait_.emplace(io_, channels_->fd());
  std::weak_ptr<int> alive = alive_;
  channels_wait_->async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this, alive](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        std::vector<std::uint32_t> changed;
        const int n = channels_->read_events(changed);
        const bool ours =
            n < 0 || (program_ &&
                      std::find(changed.begin(), changed.end(),
                                static_cast<std::uint32_t>(program_->ifindex())) != changed.end());
        if (ours && program_) {
          sync_queues();
          bind_and_hand_flood();
        }
        watch_channels();
      });
}

void UplinkController::sync_queues() {
  if (config_.queues) return;
  std::string why;
  const auto count = nic::rx_queue_count(config_.interface, why);
  if (!count) {
    if (sys::worth_logging(++failed_counts_))
      spdlog::warn("uplink {}: its RX queues cannot be counted: {} (try #{})", config_.name, why,
                   failed_counts_);
    return;
  }
  failed_counts_ = 0;
  const std::uint32_t wanted_count = std::min(*count, UplinkConfig::kMaxQueues);
  if (wanted_count == nic_queues_) return;
  spdlog::info("uplink {}: {} has {} RX queue(s){}; binding queues 0-{} (was {})", config_.name,
               config_.interface, *count,
               *count > UplinkConfig::kMaxQueues
                   ? " (an uplink binds at most " + std::to_string(UplinkConfig::kMaxQueues) +
                         "; frames to the others go to the kernel)"
                   : std::string(),
               wanted_count - 1, nic_queues_);
  nic_queues_ = wanted_count;
  for (auto q = static_cast<std::uint32_t>(ports_.size()); q < nic_queues_; ++q) add_queue_port(q);
  for (std::size_t i = 0; i < ports_.size(); ++i)
    if (!wanted(i) && ports_[i]->status().bound.load()) unbind_queue(i);
  if (flood_port_ && !wanted(*flood_port_)) {
    // Its queue is gone: the flood socket goes to a queue the NIC has.
    UplinkQueuePort* port = ports_[*flood_port_].get();
    dataplane_.owner(*ports_[*flood_port_])
        .call([port] { return port->set_flood_socket(nullptr); })
        .close();
    flood_port_.reset();
    open_flood_socket();
    hand_flood_socket();
  }
}

bool UplinkController::setup(std::string& error) {
  std::string note;
  frame_facts_ = nic::probe_uplink_frame_facts(config_.interface, config_.frame_size, &note);
  if (!note.empty()) spdlog::info("uplink {}: frame limit: {}", config_.name, note);
  frame_limit_ = nic::uplink_frame_limit(frame_facts_);
  nic::XdpProgramOptions options;
  options.object_path = bpf_object_;
  options.max_frame_len = max_frame();
  program_ = nic::XdpProgram::attach(config_.interface, options, error);
  if (!program_) return false;
  frame_facts_.xdp_mode = program_->mode();
  frame_facts_.program_frags = program_->frags();
  spdlog::info("uplink {}: XDP program on {}: {} (object {})", config_.name, config_.interface,
               program_->attach_report(), program_->object_path());
  std::string filter_error;
  filter_ = nic::UnicastFilter::open(config_.interface, filter_error);
  if (!filter_) spdlog::warn("uplink {}: unicast filter: {}", config_.name, filter_error);
  for (const auto& [name, guest] : guests_)
    if (guest.mac) steer(*guest.mac);
  open_flood_socket();
  sync_queues();
  // A queue the kernel has not let go of yet (the socket of an uplink just
  // removed from this interface, or of our program's last attachment) is
  // busy for a moment: tried again soon, not only at the next check.
  if (!bind_and_hand_flood()) retry_soon(kFirstSoonRetry);
  update_frame_limit();
  apply_max_frame();
  return true;
}

void UplinkController::open_flood_socket() {
  std::string error;
  flood_ = nic::FloodSocket::open(config_.interface, error);
  if (!flood_) spdlog::warn("uplink {}: no broadcast/multicast to guests: {}", config_.name, error);
}

bool UplinkController::bind_and_hand_flood() {
  std::string why;
  const bool ok = bind_queues(why);
  if (!ok)
    spdlog::warn("uplink {}: {} (tried again every {} s)", config_.name, why,
                 kRetryInterval.count());
  hand_flood_socket();
  return ok;
}

void UplinkController::hand_flood_socket() {
  if (!flood_ || !attached_) return;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    if (!wanted(i) || !ports_[i]->status().bound.load()) continue;
    UplinkQueuePort* port = ports_[i].get();
    dataplane_.owner(*ports_[i])
        .call([port, flood = std::move(flood_)]() mutable {
          return port->set_flood_socket(std::move(flood));
        })
        .close();  // here, not on the service thread (UplinkQueuePort::Released)
    flood_port_ = i;
    return;
  }
}

void UplinkController::retry_later() {
  std::weak_ptr<int> alive = alive_;
  retry_timer_.expires_after(kRetryInterval);
  retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    periodic_check();
    retry_later();
  });
}

// What a link event would not bring back: an attach that was refused (a
// foreign program since removed), a queue that did not exist or was held
// by another socket, our program detached by someone else (ip link set dev
// X xdp off, xdp-loader unload). Only while the interface is there.
void UplinkController::periodic_check() {
  const bool taken_away = program_ && !program_->still_attached();
  if (taken_away) {
    spdlog::warn(
        "uplink {}: its XDP program is no longer on {} (removed by someone else); "
        "attaching it again",
        config_.name, config_.interface);
    teardown();
  }
  if (program_) {
    follow_mtu();
    sync_queues();
  }
  // The kernel lets go of the removed program's socket a moment later: a
  // bind to its queue before that is refused (EBUSY). Tried again soon,
  // not only at the next check.
  if (!repair() && taken_away) retry_soon(kFirstSoonRetry);
}

void UplinkController::retry_soon(std::chrono::milliseconds wait) {
  if (wait >= kRetryInterval) return;  // the regular check goes on from here
  std::weak_ptr<int> alive = alive_;
  soon_timer_.expires_after(wait);
  soon_timer_.async_wait([this, alive, wait](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    ++soon_retries_;
    if (!repair()) retry_soon(wait * 2);
  });
}

bool UplinkController::repair() {
  const auto all_bound = [this] {
    for (std::size_t i = 0; i < ports_.size(); ++i)
      if (wanted(i) && !ports_[i]->status().bound.load()) return false;
    return true;
  };
  if (!monitor_ || (program_ && all_bound())) return true;
  nic::LinkEvent link;
  if (!monitor_->lookup(config_.interface, link)) return true;  // its return is a link event
  std::string why;
  bool ok = true;
  if (!program_) {
    ok = setup(why);
    if (ok) set_link_up(link.up);
  } else {
    ok = bind_queues(why);
    hand_flood_socket();
    update_frame_limit();
    apply_max_frame();
  }
  if (ok) {
    spdlog::info("uplink {}: set up on a later try", config_.name);
    failed_retries_ = 0;
  } else if (sys::worth_logging(++failed_retries_)) {
    spdlog::warn("uplink {}: still not set up: {} (try #{})", config_.name, why, failed_retries_);
  }
  return program_ && all_bound();
}

// The interface's MTU bounds the frames it carries (and the guest MTUs
// admitted): a change (ip link set dev X mtu N) is taken over.
void UplinkController::follow_mtu() {
  const nic::UplinkFrameFacts now =
      nic::probe_uplink_frame_facts(config_.interface, config_.frame_size, nullptr);
  if (now.interface_mtu == 0 || now.interface_mtu == frame_facts_.interface_mtu) return;
  spdlog::info("uplink {}: {} has MTU {} now (was {})", config_.name, config_.interface,
               now.interface_mtu, frame_facts_.interface_mtu);
  frame_facts_.interface_mtu = now.interface_mtu;
  update_frame_limit();
  apply_max_frame();
}

void UplinkController::teardown() {
  unbind_queues();
  if (flood_port_ && attached_) {
    UplinkQueuePort* port = ports_[*flood_port_].get();
    dataplane_.owner(*ports_[*flood_port_])
        .call([port] { return port->set_flood_socket(nullptr); })
        .close();
  }
  flood_port_.reset();
  flood_.reset();
  filter_.reset();  // removes the unicast entries / promiscuous membership
  if (program_) {
    nic::XdpSteerStats s;
    if (program_->read_stats(s) == 0) stats_base_ += s;
    program_.reset();  // detaches
  }
}

bool UplinkController::bind_queues(std::string& error) {
  bool ok = true;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    UplinkQueuePort* port = ports_[i].get();
    if (!wanted(i) || port->status().bound.load()) continue;
    xsk::UmemConfig umem_config;
    umem_config.frame_size = config_.frame_size;
    umem_config.fill_size = 2 * config_.ring_size;
    umem_config.comp_size = config_.ring_size;
    umem_config.frame_count = 4 * config_.ring_size;  // fill + RX in flight + TX
    // Room for AF_XDP TX metadata: checksums left to the kernel or device
    // (UplinkQueuePort::bind says whether they are).
    umem_config.tx_metadata = true;
    std::string why;
    auto umem = xsk::Umem::create(umem_config, why);
    std::unique_ptr<xsk::XskSocket> socket;
    if (umem) {
      xsk::XskSocketConfig sc;
      sc.ifname = config_.interface;
      sc.queue_id = port->queue();
      sc.rx_size = config_.ring_size;
      sc.tx_size = config_.ring_size;
      sc.bind_mode = config_.bind;
      // Frames longer than a UMEM frame as descriptor chains where the
      // kernel takes it (the socket falls back and says so where not).
      sc.multi_buffer = true;
      socket = xsk::XskSocket::create(*umem, sc, why);
    }
    if (!socket) {
      error = "queue " + std::to_string(port->queue()) + ": " + why;
      ok = false;
      continue;
    }
    if (int rc = program_->register_socket(port->queue(), socket->fd()); rc != 0) {
      error = "queue " + std::to_string(port->queue()) + ": xsks_map update failed (" +
              std::to_string(-rc) + ")";
      ok = false;
      continue;
    }
    spdlog::info("uplink {}: queue {} bound: {}{}", config_.name, port->queue(),
                 socket->bind_report(),
                 umem->tx_metadata() ? ", TX metadata" : " (" + umem->tx_metadata_refusal() + ")");
    if (!frame_facts_.zero_copy) {  // the queues are bound alike: the first bound stands for all
      frame_facts_.zero_copy = socket->zero_copy();
      frame_facts_.socket_multi_buffer = socket->multi_buffer();
    }
    ServiceThread* thread = &dataplane_.owner(*ports_[i]);
    thread
        ->call([thread, port, umem = std::move(umem), socket = std::move(socket)]() mutable {
          auto previous = port->bind(std::move(umem), std::move(socket));
          thread->wait_fds_changed();
          return previous;
        })
        .close();  // here, not on the service thread (UplinkQueuePort::Released)
  }
  return ok;
}

void UplinkController::unbind_queue(std::size_t i) {
  UplinkQueuePort* port = ports_[i].get();
  if (program_) program_->unregister_socket(port->queue());
  if (!attached_) return;
  ServiceThread* thread = &dataplane_.owner(*ports_[i]);
  thread
      ->call([thread, port] {
        auto released = port->unbind();
        thread->wait_fds_changed();
        return released;
      })
      .close();  // here, not on the service thread (UplinkQueuePort::Released)
}

void UplinkController::unbind_queues() {
  for (std::size_t i = 0; i < ports_.size(); ++i) unbind_queue(i);
}

void UplinkController::set_link_up(bool up) {
  link_ = up ? LinkState::kUp : LinkState::kDown;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    UplinkQueuePort* port = ports_[i].get();
    dataplane_.owner(*ports_[i]).call([port, up] { port->set_link_up(up); });
  }
}

void UplinkController::watch_links() {
  if (!monitor_wait_) monitor_wait_.emplace(io_, monitor_->fd());
  std::weak_ptr<int> alive = alive_;
  monitor_wait_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                            [this, alive](const boost::system::error_code& ec) {
                              if (ec || alive.expired()) return;
                              on_link_events();
                              watch_links();
                            });
}

void UplinkController::on_link_events() {
  std::vector<nic::LinkEvent> events;
  if (monitor_->read_events(events) < 0) return;
  for (const auto& ev : events) {
    const bool ours_by_name = ev.ifname == config_.interface;
    const bool ours_by_index = program_ && ev.ifindex == program_->ifindex();
    if (!ours_by_name && !ours_by_index) continue;
    using K = nic::LinkEvent::Kind;
    if (ev.kind == K::kDeleted || (ev.kind == K::kRenamed && !ours_by_name)) {
      spdlog::warn("uplink {}: interface {} is gone; waiting for it to come back", config_.name,
                   config_.interface);
      teardown();
      link_ = LinkState::kAbsent;
      for (std::size_t i = 0; i < ports_.size(); ++i) {
        UplinkQueuePort* port = ports_[i].get();
        dataplane_.owner(*ports_[i]).call([port] { port->set_link_up(false); });
      }
      continue;
    }
    if (!program_) {
      // Created (or renamed to our name) after having been absent.
      spdlog::info("uplink {}: interface {} appeared", config_.name, config_.interface);
      std::string why;
      if (!setup(why)) {
        spdlog::error("uplink {}: {}", config_.name, why);
        continue;
      }
      set_link_up(ev.up);
      continue;
    }
    if (ev.up && link_ != LinkState::kUp) {
      spdlog::info("uplink {}: {} is up", config_.name, config_.interface);
      set_link_up(true);
    } else if (!ev.up && link_ == LinkState::kUp) {
      spdlog::warn("uplink {}: {} is down", config_.name, config_.interface);
      set_link_up(false);
    }
  }
}

void UplinkController::poll_program_stats() {
  if (program_ && ports_.size() == 1) {
    nic::XdpSteerStats s;
    if (program_->read_stats(s) == 0) {
      // What the program steered to the queue is what that queue was offered.
      const std::uint64_t offered =
          stats_base_.redirected + stats_base_.redirect_failed + s.redirected + s.redirect_failed;
      ports_.front()->set_offered(offered);
    }
  }
  std::weak_ptr<int> alive = alive_;
  stats_timer_.expires_after(std::chrono::milliseconds(100));
  stats_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    poll_program_stats();
  });
}

void UplinkController::steer(const net::MacAddress& mac) {
  if (program_) program_->add_guest_mac(mac);
  if (!filter_) return;
  nic::UnicastFilter::Method method;
  std::string reason;
  if (filter_->add(mac, &method, &reason) == 0 &&
      method == nic::UnicastFilter::Method::kPromiscuous)
    spdlog::info("uplink {}: {} refuses unicast filter entries ({}); promiscuous instead",
                 config_.name, config_.interface, reason);
}

void UplinkController::unsteer(const net::MacAddress& mac) {
  if (program_) program_->remove_guest_mac(mac);
  if (filter_) filter_->remove(mac);
}

void UplinkController::apply_max_frame() {
  const std::uint32_t frame = max_frame();
  if (program_) program_->set_max_frame_len(frame);
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    UplinkQueuePort* port = ports_[i].get();
    dataplane_.owner(*ports_[i]).call([port, frame] { port->set_max_frame(frame); });
  }
}

void UplinkController::add_guest(const std::string& port, std::optional<net::MacAddress> mac,
                                 std::uint32_t mtu) {
  guests_[port] = Guest{mac, mtu};
  if (mac) steer(*mac);
  apply_max_frame();
  report_mtu_above(port, mtu);
}

void UplinkController::set_guest_mac(const std::string& port, std::optional<net::MacAddress> mac) {
  auto it = guests_.find(port);
  if (it == guests_.end() || it->second.mac == mac) return;
  if (it->second.mac) unsteer(*it->second.mac);
  it->second.mac = mac;
  if (mac) steer(*mac);
}

void UplinkController::remove_guest(const std::string& port) {
  auto it = guests_.find(port);
  if (it == guests_.end()) return;
  if (it->second.mac) unsteer(*it->second.mac);
  guests_.erase(it);
  apply_max_frame();
}

void UplinkController::set_tunables(const Tunables& t) {
  tunables_ = t;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    UplinkQueuePort* port = ports_[i].get();
    dataplane_.owner(*ports_[i]).call([port, t] { port->set_tunables(t); });
  }
}

std::optional<dataplane::Dataplane::Move> UplinkController::move_queue(std::uint32_t queue,
                                                                       std::uint16_t thread) {
  for (auto& port : ports_)
    if (port->queue() == queue) return dataplane_.move(*port, thread);
  return std::nullopt;
}

std::vector<UplinkController::QueueReport> UplinkController::queue_reports() const {
  std::vector<QueueReport> out;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const auto& st = ports_[i]->status();
    QueueReport r;
    r.queue = ports_[i]->queue();
    r.thread = dataplane_.thread_of(*ports_[i]);
    r.bind_mode = !st.bound.load() ? "unbound" : st.zero_copy.load() ? "zerocopy" : "copy";
    r.multi_buffer = st.bound.load() && st.multi_buffer.load();
    r.tx_checksum = !st.bound.load()                ? "unbound"
                    : st.tx_checksum_offload.load() ? "offloaded"
                                                    : "software";
    r.napi_id = st.napi_id.load();
    r.napi_requested = st.napi_busy_poll_requested.load();
    r.napi_active = st.napi_busy_poll_active.load();
    r.napi_reason = ports_[i]->napi_busy_poll_reason();
    out.push_back(std::move(r));
  }
  return out;
}

std::string UplinkController::program_report() const {
  return program_ ? program_->attach_report() : std::string{};
}

nic::XdpSteerStats UplinkController::program_stats() const {
  nic::XdpSteerStats total = stats_base_;
  nic::XdpSteerStats s;
  if (program_ && program_->read_stats(s) == 0) total += s;
  return total;
}

std::optional<std::string> UplinkController::node_interface_with(const net::MacAddress& mac) const {
  return monitor_ ? monitor_->interface_with(mac) : std::nullopt;
}

std::optional<std::chrono::nanoseconds> UplinkController::wire_source_age(
    const net::MacAddress& mac) const {
  std::chrono::nanoseconds age{};
  if (!program_ || program_->wire_source_age(mac, age) != 0) return std::nullopt;
  return age;
}

std::string UplinkController::filter_report() const {
  if (!filter_) return {};
  if (filter_->promiscuous()) return "promiscuous";
  return filter_->unicast_entries() != 0 ? "unicast list" : "";
}

}  // namespace xdpvhost::controller

#include "frontend/frontend.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace xdpvhost::testing {
namespace {

using vhost_user::ProtocolFeature;
using virtio::Feature;

}  // namespace

Frontend::Frontend(FrontendOptions options) : fopts_(std::move(options)), memory_(fopts_.memory) {}

Frontend::~Frontend() {
  disconnect();
  if (listener_) {
    listener_.reset();
    ::unlink(fopts_.socket_path.c_str());
  }
}

bool Frontend::fail(std::string message) {
  last_error_ = std::move(message);
  return false;
}

bool Frontend::fail_channel(const char* step) {
  return fail(std::string(step) + ": " + channel_.last_error());
}

// ---- connection ------------------------------------------------------------

void Frontend::listen() {
  if (listener_) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fopts_.socket_path.size() >= sizeof addr.sun_path) {
    throw std::system_error(ENAMETOOLONG, std::generic_category(), fopts_.socket_path);
  }
  std::memcpy(addr.sun_path, fopts_.socket_path.c_str(), fopts_.socket_path.size() + 1);
  ::unlink(fopts_.socket_path.c_str());
  sys::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) throw std::system_error(errno, std::generic_category(), "socket");
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::system_error(errno, std::generic_category(), "bind " + fopts_.socket_path);
  }
  if (::listen(s.get(), 4) != 0) throw std::system_error(errno, std::generic_category(), "listen");
  listener_ = std::move(s);
}

bool Frontend::connect() {
  if (channel_.connected()) return true;
  if (fopts_.role == Role::kClient) {
    std::string error;
    channel_ = VhostUserChannel::connect_to(fopts_.socket_path, fopts_.timeout, &error);
    if (!channel_.connected()) return fail(error);
  } else {
    listen();
    pollfd p{listener_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(fopts_.timeout.count()));
    if (r <= 0) return fail("no backend connected to " + fopts_.socket_path);
    sys::UniqueFd s(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!s) return fail(std::string("accept: ") + std::strerror(errno));
    channel_ = VhostUserChannel(std::move(s));
  }
  channel_.set_reply_timeout(fopts_.timeout);
  return true;
}

void Frontend::disconnect() {
  if (started_) {
    // QEMU, losing the backend, takes the used index as the new base
    // (virtio_queue_restore_last_avail_idx).
    for (Pair& p : pairs_) {
      p.rx->set_device_base(p.rx->used_idx());
      p.tx->set_device_base(p.tx->used_idx());
    }
    started_ = false;
  }
  channel_.close();
  backend_req_.reset();
}

// ---- parts -----------------------------------------------------------------

DriverQueue& Frontend::rx_queue(std::uint16_t pair) {
  if (pair >= pairs_.size()) throw std::out_of_range("no such queue pair");
  return *pairs_[pair].rx;
}
DriverQueue& Frontend::tx_queue(std::uint16_t pair) {
  if (pair >= pairs_.size()) throw std::out_of_range("no such queue pair");
  return *pairs_[pair].tx;
}
DriverQueue& Frontend::queue(std::uint16_t vring_index) {
  return vring_index % 2 == 0 ? rx_queue(vring_index / 2) : tx_queue(vring_index / 2);
}
NetDriver& Frontend::net(std::uint16_t pair) {
  if (pair >= pairs_.size()) throw std::out_of_range("no such queue pair");
  return *pairs_[pair].net;
}

std::uint64_t Frontend::stale_call_signals() {
  std::uint64_t n = 0;
  for (RingFds& f : ring_fds_) n += f.masked_call.drain();
  stale_calls_ += n;
  return stale_calls_;
}

std::uint64_t Frontend::error_signals(std::uint16_t vring_index) {
  if (vring_index >= ring_fds_.size()) return 0;
  return ring_fds_[vring_index].err.drain();
}

// ---- negotiation -----------------------------------------------------------

std::uint64_t Frontend::features_to_ack() const {
  std::uint64_t accept = options_.accept_features;
  if (!options_.event_idx) accept &= ~virtio::bit(Feature::kRingEventIdx);
  if (!options_.indirect) accept &= ~virtio::bit(Feature::kRingIndirectDesc);
  if (!options_.mrg_rxbuf) accept &= ~virtio::bit(Feature::kNetMrgRxbuf);
  if (options_.queue_pairs <= 1) accept &= ~virtio::bit(Feature::kNetMq);
  return offered_features_ & accept;
}

void Frontend::build_queues() {
  pairs_.clear();
  memory_.zero();
  memory_.reset_allocator();
  const bool event_idx = virtio::has(acked_features_, Feature::kRingEventIdx);
  const DriverQueueOptions qopts{options_.queue_size, event_idx, options_.indirect_capacity};
  for (std::uint16_t p = 0; p < options_.queue_pairs; ++p) {
    Pair pair;
    pair.rx = std::make_unique<DriverQueue>(memory_, static_cast<std::uint16_t>(2 * p), qopts);
    pair.tx = std::make_unique<DriverQueue>(memory_, static_cast<std::uint16_t>(2 * p + 1), qopts);
    pair.net = std::make_unique<NetDriver>(memory_, *pair.rx, *pair.tx, acked_features_,
                                           options_.buffer_slot_size);
    pairs_.push_back(std::move(pair));
  }
  pair_enabled_.assign(options_.queue_pairs, false);
}

bool Frontend::negotiate(const NegotiateOptions& options, bool resume) {
  if (!channel_.connected()) return fail("negotiate: not connected");
  if (options.queue_pairs == 0) return fail("negotiate: queue_pairs must be at least 1");
  const bool same_geometry = pairs_.size() == options.queue_pairs && !pairs_.empty() &&
                             pairs_[0].rx->size() == options.queue_size;
  options_ = options;
  channel_.set_reply_ack(false);
  channel_.set_ack_all(false);
  mem_regions_added_ = false;
  ring_fds_.clear();
  ring_fds_.resize(2u * options_.queue_pairs);
  if (!connection_setup()) return false;

  acked_features_ = features_to_ack();
  if (resume && same_geometry) {
    const bool event_idx = virtio::has(acked_features_, Feature::kRingEventIdx);
    for (Pair& p : pairs_) {
      if (p.rx->event_idx() != event_idx) {
        return fail("negotiate: resume with a different EVENT_IDX setting");
      }
    }
  } else {
    build_queues();
  }
  if (!driver_features()) return false;
  return start();
}

bool Frontend::connection_setup() {
  const bool want_protocol =
      virtio::has(options_.accept_features, Feature::kVhostUserProtocolFeatures);
  // QEMU runs one vhost_dev per queue pair on the shared connection, and each
  // one goes through backend init and SET_OWNER.
  for (std::uint16_t p = 0; p < options_.queue_pairs; ++p) {
    auto features = channel_.get_features();
    if (!features) return fail_channel("GET_FEATURES");
    offered_features_ = *features;
    const bool protocol =
        want_protocol && virtio::has(offered_features_, Feature::kVhostUserProtocolFeatures);
    if (protocol) {
      auto pf = channel_.get_protocol_features();
      if (!pf) return fail_channel("GET_PROTOCOL_FEATURES");
      offered_protocol_ = *pf;
      acked_protocol_ = offered_protocol_ & options_.accept_protocol_features;
      if (!channel_.set_protocol_features(acked_protocol_)) {
        return fail_channel("SET_PROTOCOL_FEATURES");
      }
      channel_.set_reply_ack(vhost_user::has(acked_protocol_, ProtocolFeature::kReplyAck));
      channel_.set_ack_all(options_.ack_all);
      if (vhost_user::has(acked_protocol_, ProtocolFeature::kMq)) {
        queue_num_ = channel_.get_queue_num();
        if (!queue_num_) return fail_channel("GET_QUEUE_NUM");
        if (*queue_num_ < options_.queue_pairs) {
          return fail("backend supports " + std::to_string(*queue_num_) + " queue pairs, " +
                      std::to_string(options_.queue_pairs) + " wanted");
        }
      }
      if (vhost_user::has(acked_protocol_, ProtocolFeature::kConfigureMemSlots)) {
        auto slots = channel_.get_max_mem_slots();
        if (!slots) return fail_channel("GET_MAX_MEM_SLOTS");
        if (*slots < memory_.regions().size()) return fail("backend has too few memory slots");
      }
    } else {
      offered_protocol_ = 0;
      acked_protocol_ = 0;
    }
    if (options_.queue_pairs > 1 && !vhost_user::has(acked_protocol_, ProtocolFeature::kMq)) {
      return fail("several queue pairs wanted but the MQ protocol feature is not negotiated");
    }
    if (p == 0 && vhost_user::has(acked_protocol_, ProtocolFeature::kBackendReq)) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return fail(std::string("socketpair: ") + std::strerror(errno));
      }
      backend_req_.reset(sv[0]);
      sys::UniqueFd theirs(sv[1]);
      if (!channel_.set_backend_req_fd(theirs.get())) return fail_channel("SET_SLAVE_REQ_FD");
    }
    if (!channel_.set_owner()) return fail_channel("SET_OWNER");
    if (!channel_.get_features()) return fail_channel("GET_FEATURES");
    for (std::uint16_t ring = 2 * p; ring < 2 * p + 2; ++ring) {
      if (!channel_.set_vring_call(ring, ring_fds_[ring].masked_call.get())) {
        return fail_channel("SET_VRING_CALL");
      }
      if (!channel_.set_vring_err(ring, ring_fds_[ring].err.get())) {
        return fail_channel("SET_VRING_ERR");
      }
    }
  }
  return true;
}

bool Frontend::enable_pair(std::uint16_t pair, bool enable) {
  if (!virtio::has(acked_features_, Feature::kVhostUserProtocolFeatures)) return true;
  for (std::uint16_t ring = 2 * pair; ring < 2 * pair + 2; ++ring) {
    if (!channel_.set_vring_enable(ring, enable)) return fail_channel("SET_VRING_ENABLE");
  }
  return true;
}

bool Frontend::driver_features() {
  // The guest driver wrote its features: virtio-net attaches pair 0 and
  // detaches the others (peer_attach / peer_detach).
  for (std::uint16_t p = 0; p < pairs_.size(); ++p) {
    if (!enable_pair(p, p == 0)) return false;
    pair_enabled_[p] = p == 0;
  }
  if (options_.mtu && virtio::has(acked_features_, Feature::kNetMtu) &&
      vhost_user::has(acked_protocol_, ProtocolFeature::kNetMtu)) {
    if (!channel_.net_set_mtu(*options_.mtu)) return fail_channel("NET_SET_MTU");
  }
  return true;
}

bool Frontend::add_status(std::uint8_t bits) {
  auto status = channel_.get_status();
  if (!status) return fail_channel("GET_STATUS");
  const std::uint8_t value = static_cast<std::uint8_t>(*status | bits);
  if (!channel_.set_status(value)) return fail_channel("SET_STATUS");
  last_status_ = value;
  return true;
}

bool Frontend::send_memory_table() {
  std::vector<vhost_user::MemoryRegion> regions;
  for (const ArenaRegion& r : memory_.regions()) {
    regions.push_back({r.guest_phys_addr, r.size, r.user_addr, r.mmap_offset});
  }
  if (vhost_user::has(acked_protocol_, ProtocolFeature::kConfigureMemSlots)) {
    // QEMU sends only the difference to what the backend has.
    if (mem_regions_added_) return true;
    for (const auto& r : regions) {
      if (!channel_.add_mem_reg(r, memory_.fd())) return fail_channel("ADD_MEM_REG");
    }
    mem_regions_added_ = true;
    return true;
  }
  const std::vector<int> fds(regions.size(), memory_.fd());
  if (!channel_.set_mem_table(regions, fds)) return fail_channel("SET_MEM_TABLE");
  return true;
}

bool Frontend::start_ring(DriverQueue& q) {
  const std::uint32_t idx = q.index();
  if (!channel_.set_vring_num(idx, q.size())) return fail_channel("SET_VRING_NUM");
  if (!channel_.set_vring_base(idx, q.device_base())) return fail_channel("SET_VRING_BASE");
  vhost_user::VringAddr addr{};
  addr.index = idx;
  addr.flags = 0;
  addr.desc_user_addr = *memory_.user_addr_of(q.desc_gpa());
  addr.used_user_addr = *memory_.user_addr_of(q.used_gpa());
  addr.avail_user_addr = *memory_.user_addr_of(q.avail_gpa());
  addr.log_guest_addr = q.used_gpa();  // QEMU sends used_phys even without logging
  if (!channel_.set_vring_addr(addr)) return fail_channel("SET_VRING_ADDR");
  if (!channel_.set_vring_kick(idx, q.kick_fd().get())) return fail_channel("SET_VRING_KICK");
  if (!channel_.set_vring_call(idx, q.call_fd().get())) return fail_channel("SET_VRING_CALL");
  return true;
}

bool Frontend::start_pair(std::uint16_t pair) {
  // vhost_net_start restores the enable state before starting the pair.
  if (pair_enabled_[pair] && !enable_pair(pair, true)) return false;
  if (!channel_.set_features(acked_features_)) return fail_channel("SET_FEATURES");
  const bool status = vhost_user::has(acked_protocol_, ProtocolFeature::kStatus);
  if (status && !add_status(vhost_user::kStatusFeaturesOk)) return false;
  if (!send_memory_table()) return false;
  if (!start_ring(*pairs_[pair].rx) || !start_ring(*pairs_[pair].tx)) return false;
  if (status && pair + 1u == pairs_.size() &&
      !add_status(vhost_user::kStatusAcknowledge | vhost_user::kStatusDriver |
                  vhost_user::kStatusDriverOk)) {
    return false;
  }
  return true;
}

bool Frontend::start() {
  if (!channel_.connected()) return fail("start: not connected");
  if (pairs_.empty()) return fail("start: nothing negotiated");
  for (std::uint16_t p = 0; p < pairs_.size(); ++p) {
    if (!start_pair(p)) return false;
  }
  // The guest driver turns on the other pairs (VIRTIO_NET_CTRL_MQ) once the
  // device runs.
  for (std::uint16_t p = 1; p < pairs_.size(); ++p) {
    if (pair_enabled_[p]) continue;
    if (!enable_pair(p, true)) return false;
    pair_enabled_[p] = true;
  }
  started_ = true;
  return true;
}

std::optional<std::vector<std::uint16_t>> Frontend::stop() {
  if (!channel_.connected()) {
    fail("stop: not connected");
    return std::nullopt;
  }
  std::vector<std::uint16_t> bases(2 * pairs_.size(), 0);
  const bool status = vhost_user::has(acked_protocol_, ProtocolFeature::kStatus);
  for (std::uint16_t p = 0; p < pairs_.size(); ++p) {
    if (status && p + 1u == pairs_.size()) {
      if (!channel_.set_status(0)) {
        fail_channel("SET_STATUS");
        return std::nullopt;
      }
      last_status_ = 0;
    }
    for (DriverQueue* q : {pairs_[p].rx.get(), pairs_[p].tx.get()}) {
      auto base = channel_.get_vring_base(q->index());
      if (!base) {
        fail_channel("GET_VRING_BASE");
        return std::nullopt;
      }
      q->set_device_base(static_cast<std::uint16_t>(*base));
      bases[q->index()] = static_cast<std::uint16_t>(*base);
    }
  }
  started_ = false;
  return bases;
}

bool Frontend::reset_and_renegotiate(std::optional<NegotiateOptions> options) {
  if (!channel_.connected()) return fail("reset: not connected");
  if (pairs_.empty()) return fail("reset: nothing negotiated");
  if (started_ && !stop()) return false;
  NegotiateOptions next = options.value_or(options_);
  if (next.queue_pairs != pairs_.size()) {
    // QEMU fixes the number of vhost devices (pairs) when the NIC is created.
    return fail("reset: queue_pairs cannot change on a connection");
  }
  const bool same_geometry = next.queue_size == pairs_[0].rx->size();
  options_ = next;
  channel_.set_ack_all(options_.ack_all && channel_.reply_ack());
  acked_features_ = features_to_ack();
  if (same_geometry) {
    // Guest RAM after a reboot: nothing of the old rings or buffers remains.
    memory_.zero();
    const bool event_idx = virtio::has(acked_features_, Feature::kRingEventIdx);
    for (Pair& p : pairs_) {
      p.rx->reset(event_idx);
      p.tx->reset(event_idx);
      p.net->reset(acked_features_);
    }
  } else {
    build_queues();
  }
  if (!driver_features()) return false;
  return start();
}

}  // namespace xdpvhost::testing

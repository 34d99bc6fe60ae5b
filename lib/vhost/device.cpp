#include "vhost/device.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>
#include <vector>

#include "vhost/message_table.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::vhost {

// Every vring of the largest device has a name in SET_VRING_KICK/CALL/ERR.
static_assert(Device::kMaxVrings <= kVringIndexMask + 1);

using virtio::Feature;

namespace {

sys::UniqueFd dup_fd(const sys::UniqueFd& fd) {
  return fd.valid() ? sys::UniqueFd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)) : sys::UniqueFd{};
}

}  // namespace

Device::Device(DeviceOptions options, DeviceBackend& backend)
    : options_(options), backend_(backend) {
  if (options_.queue_pairs == 0) options_.queue_pairs = 1;
  if (options_.queue_pairs > kMaxQueuePairs) options_.queue_pairs = kMaxQueuePairs;
}

Device::~Device() {
  disconnect();
}

std::uint64_t Device::offered_features() const noexcept {
  using virtio::bit;
  std::uint64_t f = bit(Feature::kVersion1) | bit(Feature::kNetMrgRxbuf) |
                    bit(Feature::kRingEventIdx) | bit(Feature::kRingIndirectDesc) |
                    bit(Feature::kAnyLayout) | bit(Feature::kVhostUserProtocolFeatures);
  // Guest checksums are completed in software before a frame leaves through
  // the uplink or reaches a guest that cannot take a partial checksum.
  if (options_.offer_csum) f |= bit(Feature::kNetCsum) | bit(Feature::kNetGuestCsum);
  // Segmentation offload both ways (it needs the checksum offload): a
  // guest's TSO/USO frames are segmented in software where the receiver
  // cannot take them (the uplink, a guest without GUEST_TSO), passed on
  // whole where it can; frames from the uplink are coalesced (GRO) for a
  // guest with GUEST_TSO. The set only ever grows between versions: QEMU
  // replays what it acked when a backend reconnects.
  if (options_.offer_csum && options_.offer_tso)
    f |= bit(Feature::kNetHostTso4) | bit(Feature::kNetHostTso6) | bit(Feature::kNetHostEcn) |
         bit(Feature::kNetHostUso) | bit(Feature::kNetGuestTso4) | bit(Feature::kNetGuestTso6) |
         bit(Feature::kNetGuestEcn) | bit(Feature::kNetGuestUso4) | bit(Feature::kNetGuestUso6);
  // The MTU itself lives in QEMU's config space (host_mtu=); QEMU passes it
  // to the guest only if the backend offers the feature, and then tells us
  // with NET_SET_MTU.
  f |= bit(Feature::kNetMtu);
  if (options_.queue_pairs > 1) f |= bit(Feature::kNetMq);
  // Live migration: every write into guest memory is marked in the dirty
  // log while LOG_ALL is acked (with LOG_SHMFD below). GUEST_ANNOUNCE lets
  // QEMU have the guest announce itself after the move (QEMU emulates it
  // over the control queue it keeps; without it QEMU asks for SEND_RARP).
  f |= bit(Feature::kLogAll) | bit(Feature::kNetGuestAnnounce);
  return f;
}

std::uint64_t Device::offered_protocol_features() const noexcept {
  std::uint64_t f = bit(ProtocolFeature::kReplyAck) | bit(ProtocolFeature::kNetMtu) |
                    bit(ProtocolFeature::kResetDevice) | bit(ProtocolFeature::kStatus) |
                    bit(ProtocolFeature::kLogShmfd) | bit(ProtocolFeature::kRarp);
  if (options_.queue_pairs > 1) f |= bit(ProtocolFeature::kMq);
  return f;
}

bool Device::reply_ack_negotiated() const noexcept {
  return (acked_protocol_features_ & bit(ProtocolFeature::kReplyAck)) != 0;
}

bool Device::log_shmfd_negotiated() const noexcept {
  return (acked_protocol_features_ & bit(ProtocolFeature::kLogShmfd)) != 0;
}

bool Device::waits_for_reply(const MessageSpec& spec) const noexcept {
  // SET_LOG_BASE is answered only under LOG_SHMFD: a frontend without it
  // reads no reply, and one it did not wait for would answer its next
  // request instead.
  if (spec.reply_bytes == kReplyEmpty) return log_shmfd_negotiated();
  return spec.reply_bytes != kReplyNone;
}

bool Device::logging() const noexcept {
  return virtio::has(acked_features_, Feature::kLogAll) && log_ != nullptr;
}

Outcome Device::handle(Message& message) {
  const MessageSpec* spec = find_message_spec(message.header.request);
  if (spec == nullptr) return on_unsupported(message);
  Outcome outcome;
  if (std::string why = check_message(*spec, message); !why.empty())
    outcome = Outcome::failure(why);
  else
    outcome = (this->*spec->handler)(message);
  if (!outcome.ok && !outcome.disconnect && waits_for_reply(*spec)) {
    // The frontend waits for this reply whatever happens: answer zeros
    // (unless the connection is closed instead).
    outcome.kind = Outcome::Kind::kReply;
    if (spec->reply_bytes == kReplyEmpty)
      outcome.reply.clear();
    else
      outcome.reply.assign(spec->reply_bytes == kReplySameSizeAsRequest
                               ? std::min<std::uint32_t>(message.header.size, kMaxPayloadSize)
                               : spec->reply_bytes,
                           0);
  }
  return outcome;
}

// ---- features and ownership ------------------------------------------------

Outcome Device::on_get_features(Message&) {
  return Outcome::reply_with(offered_features());
}

Outcome Device::on_set_features(Message& m) {
  const std::uint64_t features = m.u64();
  if ((features & ~offered_features()) != 0)
    return Outcome::failure("SET_FEATURES: acks features that were not offered");
  const bool changed = features != acked_features_;
  const bool was_logging = logging();
  acked_features_ = features;
  // Header size, event index, the enable rule and dirty logging depend on
  // features: running rings are handed over again.
  if (changed) refresh_all(/*restart=*/true);
  if (!virtio::has(features, Feature::kLogAll)) {
    // Logging is over (migration done or cancelled): the rings no longer
    // hold the log, and the frontend frees it.
    log_.reset();
  }
  if (was_logging != logging())
    spdlog::info("vhost device: dirty logging {}", logging() ? "on" : "off");
  return Outcome::success();
}

Outcome Device::on_get_protocol_features(Message&) {
  return Outcome::reply_with(offered_protocol_features());
}

Outcome Device::on_set_protocol_features(Message& m) {
  const std::uint64_t features = m.u64();
  if ((features & ~offered_protocol_features()) != 0)
    return Outcome::failure("SET_PROTOCOL_FEATURES: acks features that were not offered");
  acked_protocol_features_ = features;
  return Outcome::success();
}

Outcome Device::on_get_queue_num(Message&) {
  return Outcome::reply_with(std::uint64_t{options_.queue_pairs});
}

Outcome Device::on_set_owner(Message&) {
  owner_set_ = true;
  return Outcome::success();
}

Outcome Device::on_reset_owner(Message&) {
  reset_session();
  return Outcome::success();
}

Outcome Device::on_reset_device(Message&) {
  const std::uint64_t protocol = acked_protocol_features_;
  reset_session();
  acked_protocol_features_ = protocol;  // a device reset keeps the session's protocol
  owner_set_ = true;
  return Outcome::success();
}

Outcome Device::on_set_status(Message& m) {
  status_ = static_cast<std::uint8_t>(m.u64());
  return Outcome::success();
}

Outcome Device::on_get_status(Message&) {
  return Outcome::reply_with(std::uint64_t{status_});
}

Outcome Device::on_net_set_mtu(Message& m) {
  if ((acked_protocol_features_ & bit(ProtocolFeature::kNetMtu)) == 0)
    return Outcome::failure("NET_SET_MTU: protocol feature NET_MTU not negotiated");
  const std::uint64_t mtu = m.u64();
  if (mtu < 68 || mtu > 65535) return Outcome::failure("NET_SET_MTU: " + std::to_string(mtu));
  mtu_ = static_cast<std::uint32_t>(mtu);
  backend_.set_mtu(mtu_);
  return Outcome::success();
}

Outcome Device::on_set_backend_req_fd(Message&) {
  // BACKEND_REQ is not offered; the fd is closed with the message.
  return Outcome::failure("SET_BACKEND_REQ_FD: backend requests are not supported");
}

Outcome Device::on_unsupported(Message& m) {
  return Outcome::failure(request_name(m.header.request) + ": not supported");
}

// ---- memory ----------------------------------------------------------------

Outcome Device::on_set_mem_table(Message& m) {
  const auto header = m.as<MemoryTableHeader>();
  std::vector<virtio::MemoryRegionSpec> specs;
  specs.reserve(header.nregions);
  for (std::uint32_t i = 0; i < header.nregions; ++i) {
    MemoryRegionDesc d;
    std::memcpy(&d, m.payload.data() + sizeof header + i * sizeof d, sizeof d);
    spdlog::debug("SET_MEM_TABLE region {}: gpa 0x{:x} size 0x{:x} uva 0x{:x} offset 0x{:x}", i,
                  d.guest_phys_addr, d.memory_size, d.user_addr, d.mmap_offset);
    specs.push_back(virtio::MemoryRegionSpec{d.guest_phys_addr, d.memory_size, d.user_addr,
                                             d.mmap_offset, m.take_fd(i)});
  }
  std::string error;
  auto memory = virtio::GuestMemory::map(std::move(specs), error);
  if (memory == nullptr) {
    memory_refusal_ = error;
    return Outcome::failure("SET_MEM_TABLE: " + error);
  }
  memory_ = std::move(memory);
  memory_refusal_.clear();
  // Running rings are handed over again with the new table; the datapath
  // drops its reference to the old one, which is unmapped after that.
  refresh_all(/*restart=*/true);
  return Outcome::success();
}

// ---- live migration: the dirty log, announcing the move ---------------------

Outcome Device::on_set_log_base(Message& m) {
  // The log is shared memory only with LOG_SHMFD (the fd checked against
  // the table's one-fd rule); without it QEMU blocks migration anyway.
  if (!log_shmfd_negotiated())
    return Outcome::failure("SET_LOG_BASE: protocol feature LOG_SHMFD not negotiated");
  const auto d = m.as<LogDescription>();
  std::string error;
  auto log = virtio::DirtyLog::map(m.take_fd(0), d.mmap_size, d.mmap_offset, error);
  // The frontend waits for an empty reply whatever happens.
  Outcome outcome;
  outcome.kind = Outcome::Kind::kReply;
  if (log == nullptr) {
    // Without a log the rings must not write into guest memory while
    // LOG_ALL is acked: they stay stopped (should_run) rather than corrupt
    // the migration.
    log_.reset();
    refresh_all(/*restart=*/false);
    outcome.ok = false;
    outcome.error = "SET_LOG_BASE: " + error + "; rings stop while LOG_ALL is acked";
    return outcome;
  }
  spdlog::debug("SET_LOG_BASE: {} bytes at offset {} (covers {} MiB)", d.mmap_size, d.mmap_offset,
                log->covered_bytes() >> 20);
  log_ = std::move(log);
  // A new log (the first one, or a resize while logging): running rings
  // take it over.
  if (virtio::has(acked_features_, Feature::kLogAll)) refresh_all(/*restart=*/true);
  return outcome;
}

Outcome Device::on_set_log_fd(Message& m) {
  log_notify_ = m.take_fd(0);
  return Outcome::success();
}

Outcome Device::on_send_rarp(Message& m) {
  if ((acked_protocol_features_ & bit(ProtocolFeature::kRarp)) == 0)
    return Outcome::failure("SEND_RARP: protocol feature RARP not negotiated");
  std::array<std::uint8_t, 6> mac{};
  std::memcpy(mac.data(), m.payload.data(), mac.size());
  const bool zero = std::all_of(mac.begin(), mac.end(), [](std::uint8_t b) { return b == 0; });
  if (zero || (mac[0] & 1) != 0) return Outcome::failure("SEND_RARP: not a unicast MAC");
  if (!backend_.announce(mac)) return Outcome::failure("SEND_RARP: the backend cannot announce");
  ++rarps_sent_;
  return Outcome::success();
}

// ---- rings -----------------------------------------------------------------

Device::Vring* Device::vring_from_state(const Message& m, std::string& error) {
  const auto state = m.as<VringState>();
  if (state.index >= vring_count()) {
    error =
        request_name(m.header.request) + ": vring " + std::to_string(state.index) + " out of range";
    return nullptr;
  }
  return &vrings_[state.index];
}

Outcome Device::on_set_vring_num(Message& m) {
  std::string error;
  Vring* v = vring_from_state(m, error);
  if (v == nullptr) return Outcome::failure(error);
  const std::uint32_t num = m.as<VringState>().num;
  if (num == 0 || num > virtio::kMaxQueueSize || (num & (num - 1)) != 0)
    return Outcome::failure("SET_VRING_NUM: size " + std::to_string(num) +
                            " is not a power of two up to 32768");
  v->num = num;
  refresh(m.as<VringState>().index, /*restart=*/true);
  return Outcome::success();
}

Outcome Device::on_set_vring_addr(Message& m) {
  const auto a = m.as<VringAddress>();
  if (a.index >= vring_count())
    return Outcome::failure("SET_VRING_ADDR: vring " + std::to_string(a.index) + " out of range");
  if ((a.flags & ~VringAddress::kFlagLog) != 0)
    return Outcome::failure("SET_VRING_ADDR: unknown flags 0x" + std::to_string(a.flags));
  Vring& v = vrings_[a.index];
  v.log_used = (a.flags & VringAddress::kFlagLog) != 0;
  v.log_guest_addr = a.log_guest_addr;
  v.desc = a.desc_user_addr;
  v.avail = a.avail_user_addr;
  v.used = a.used_user_addr;
  v.addr_set = true;
  refresh(a.index, /*restart=*/true);
  return Outcome::success();
}

Outcome Device::on_set_vring_base(Message& m) {
  std::string error;
  Vring* v = vring_from_state(m, error);
  if (v == nullptr) return Outcome::failure(error);
  const std::uint32_t base = m.as<VringState>().num;
  if (base > 0xffff)
    return Outcome::failure("SET_VRING_BASE: base above 65535 (packed rings are not offered)");
  if (v->running) stop(m.as<VringState>().index);
  v->base = static_cast<std::uint16_t>(base);
  v->base_known = true;
  refresh(m.as<VringState>().index);
  return Outcome::success();
}

Outcome Device::on_get_vring_base(Message& m) {
  std::string error;
  Vring* v = vring_from_state(m, error);
  if (v == nullptr) return Outcome::failure(error);
  const std::uint32_t index = m.as<VringState>().index;
  stop(index);
  v->kick_received = false;  // the ring stays stopped until the next SET_VRING_KICK
  if (!v->base_known) {
    // A made-up index would resume the ring elsewhere (after a migration, on
    // another host); the frontend is told by losing the connection instead.
    Outcome o = Outcome::failure("GET_VRING_BASE: vring " + std::to_string(index) +
                                 ": its service thread is stalled, where the ring stopped is "
                                 "unknown");
    o.disconnect = true;
    return o;
  }
  return Outcome::reply_with(VringState{index, v->base});
}

Device::Vring* Device::vring_from_fd_message(Message& m, sys::UniqueFd& fd, std::string& error) {
  const std::uint64_t value = m.u64();
  const auto index = static_cast<std::uint32_t>(value & kVringIndexMask);
  if ((value & ~(kVringIndexMask | kVringNoFdFlag)) != 0) {
    error = request_name(m.header.request) + ": unknown bits in 0x" + std::to_string(value);
    return nullptr;
  }
  if (index >= vring_count()) {
    error = request_name(m.header.request) + ": vring " + std::to_string(index) + " out of range";
    return nullptr;
  }
  fd = (value & kVringNoFdFlag) ? sys::UniqueFd{} : m.take_fd(0);
  return &vrings_[index];
}

Outcome Device::on_set_vring_kick(Message& m) {
  std::string error;
  sys::UniqueFd fd;
  Vring* v = vring_from_fd_message(m, fd, error);
  if (v == nullptr) return Outcome::failure(error);
  const auto index = static_cast<std::uint32_t>(m.u64() & kVringIndexMask);
  v->kick = std::move(fd);
  v->kick_received = true;
  refresh(index, /*restart=*/true);
  return Outcome::success();
}

Outcome Device::on_set_vring_call(Message& m) {
  std::string error;
  sys::UniqueFd fd;
  Vring* v = vring_from_fd_message(m, fd, error);
  if (v == nullptr) return Outcome::failure(error);
  v->call = std::move(fd);
  refresh(static_cast<std::uint32_t>(m.u64() & kVringIndexMask), /*restart=*/true);
  return Outcome::success();
}

Outcome Device::on_set_vring_err(Message& m) {
  std::string error;
  sys::UniqueFd fd;
  Vring* v = vring_from_fd_message(m, fd, error);
  if (v == nullptr) return Outcome::failure(error);
  v->err = std::move(fd);
  refresh(static_cast<std::uint32_t>(m.u64() & kVringIndexMask), /*restart=*/true);
  return Outcome::success();
}

Outcome Device::on_set_vring_enable(Message& m) {
  std::string error;
  Vring* v = vring_from_state(m, error);
  if (v == nullptr) return Outcome::failure(error);
  const std::uint32_t enable = m.as<VringState>().num;
  if (enable > 1) return Outcome::failure("SET_VRING_ENABLE: value " + std::to_string(enable));
  v->enabled = enable == 1;
  refresh(m.as<VringState>().index);
  return Outcome::success();
}

// ---- handing rings to the datapath -----------------------------------------

bool Device::should_run(std::uint32_t index) const noexcept {
  const Vring& v = vrings_[index];
  // Without PROTOCOL_FEATURES rings are enabled once started (vhost-user.rst,
  // "Ring states"); with it they wait for SET_VRING_ENABLE.
  const bool protocol = virtio::has(acked_features_, Feature::kVhostUserProtocolFeatures);
  // LOG_ALL acked but no usable log: no write may go unlogged.
  const bool log_ok = !virtio::has(acked_features_, Feature::kLogAll) || log_ != nullptr;
  return memory_ != nullptr && v.num != 0 && v.addr_set && v.kick_received &&
         (v.enabled || !protocol) && log_ok;
}

void Device::stop(std::uint32_t index, RingStop why) {
  Vring& v = vrings_[index];
  if (!v.running) return;
  const std::optional<std::uint16_t> base = backend_.stop_queue(index, why);
  if (base) v.base = *base;
  v.base_known = base.has_value();
  v.running = false;
}

void Device::refresh(std::uint32_t index, bool restart) {
  Vring& v = vrings_[index];
  const bool want = should_run(index);
  if (v.running && (!want || restart)) stop(index, want ? RingStop::kRestart : RingStop::kForGood);
  if (!want || v.running) return;
  QueueStart start;
  start.vring = index;
  start.ring.size = v.num;
  start.ring.desc_uva = v.desc;
  start.ring.avail_uva = v.avail;
  start.ring.used_uva = v.used;
  start.ring.last_avail_idx = v.base;
  start.ring.event_idx = virtio::has(acked_features_, Feature::kRingEventIdx);
  if (logging()) {
    start.ring.log = log_;
    start.ring.log_used = v.log_used;
    start.ring.used_log_gpa = v.log_guest_addr;
  }
  start.memory = memory_;
  start.kick = dup_fd(v.kick);
  start.call = dup_fd(v.call);
  start.err = dup_fd(v.err);
  start.features = acked_features_;
  backend_.start_queue(std::move(start));
  v.running = true;
}

void Device::refresh_all(bool restart) {
  for (std::uint32_t i = 0; i < vring_count(); ++i) refresh(i, restart);
}

void Device::reset_session() {
  for (std::uint32_t i = 0; i < vring_count(); ++i) stop(i);
  vrings_ = {};
  memory_.reset();
  memory_refusal_.clear();
  log_.reset();
  log_notify_.reset();
  owner_set_ = false;
  acked_features_ = 0;
  acked_protocol_features_ = 0;
  status_ = 0;
}

void Device::disconnect() {
  reset_session();
}

}  // namespace xdpvhost::vhost

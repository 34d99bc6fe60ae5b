#pragma once
// Control-side owner of one guest port: the vhost-user socket and device
// state machine (control thread), and the GuestPort datapath they drive on
// the service threads. Implements the device's DeviceBackend by running each
// ring start/stop on the thread that polls the ring.
//
// Queue pairs are spread over the service threads: a port with P pairs and
// T threads has G = min(P, T) queue groups, one GuestPort each; group g runs
// on thread (first + g) mod T, where `first` is the configured thread or the
// least loaded one, and pair p belongs to group p mod G (round-robin). Each
// pair is polled by exactly one thread. A group may be moved to another
// thread later (queue.move: Dataplane::move); which thread runs it is then
// the Dataplane's to say, and the port's commands go there.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/migration_evidence.hpp"
#include "controller/port_config.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port.hpp"
#include "vhost/device.hpp"
#include "vhost/socket_endpoint.hpp"

namespace xdpvhost::controller {

using dataplane::Dataplane;
using dataplane::GuestPort;
using dataplane::PortTunables;

// Where a port's MAC came from.
enum class MacSource : std::uint8_t { kNone, kConfig, kLearned };
constexpr const char* to_string(MacSource s) noexcept {
  return s == MacSource::kConfig ? "config" : s == MacSource::kLearned ? "learned" : "none";
}

// Whether a fixed port holds its configured MAC from the start, or waits for
// it while another port of its VM holds it (a same-node migration's target).
enum class MacAtStart : std::uint8_t { kHolds, kWaits };

class GuestPortController final : private vhost::DeviceBackend, private dataplane::MacLearner {
 public:
  // Decides, on the control thread, whether `port` may take `mac` its guest
  // sent from (mac_policy learn, learn-move; fixed: its own, held by another
  // port of its VM), and if so makes everything
  // outside the port follow (the uplink's steering): nullopt. Otherwise the
  // reason, with `why` saying it for the log and port.get ("02:..:01 is the
  // address of interface eth1").
  using MacArbiter = std::function<std::optional<dataplane::MacRefusal>(
      const GuestPortController& port, const net::MacAddress& mac, std::string& why)>;

  // The last MAC the port was refused, for port.get.
  struct MacRefusalRecord {
    net::MacAddress mac;
    dataplane::MacRefusal reason = dataplane::MacRefusal::kAnotherPort;
    std::string why;
  };

  // `uplink_id` is the id of the uplink the config names (or
  // dataplane::Port::kNoUplinkId), `tunables` the global ones with the port's
  // overrides applied.
  GuestPortController(Dataplane& dataplane, boost::asio::io_context& io, PortConfig config,
                      std::uint32_t uplink_id, const PortTunables& tunables,
                      MacArbiter arbiter = {}, MacAtStart at_start = MacAtStart::kHolds);
  ~GuestPortController() override;
  GuestPortController(const GuestPortController&) = delete;
  GuestPortController& operator=(const GuestPortController&) = delete;

  // Attaches the port to its thread and opens the socket.
  bool start(std::string& error);

  const PortConfig& config() const noexcept { return config_; }
  // The first queue group (pair 0; the port's id and MAC in the switch).
  const GuestPort& port() const noexcept { return *port_; }
  // Every queue group, the first one first, and the thread each runs on.
  std::size_t group_count() const noexcept { return 1 + more_groups_.size(); }
  const GuestPort& group(std::size_t g) const noexcept {
    return g == 0 ? *port_ : *more_groups_[g - 1].port;
  }
  // The thread group g runs on: the Dataplane's word once it is attached (a
  // move changes it), its placement before.
  std::uint16_t group_thread(std::size_t g) const {
    if (attached_) return dataplane_.thread_of(group(g));
    return g == 0 ? placement_ : more_groups_[g - 1].placement;
  }
  // Moves queue group g to service thread `thread` (Dataplane::move). The
  // port is started.
  Dataplane::Move move_group(std::size_t g, std::uint16_t thread) {
    return dataplane_.move(group_port(g), thread);
  }
  // The group that polls queue pair `pair`.
  std::size_t group_of_pair(std::uint32_t pair) const noexcept { return pair % group_count(); }
  // A vring's state, from the group that polls it.
  GuestPort::QueueState queue_state(std::uint32_t vring) const noexcept {
    return group(group_of_pair(vring / 2)).queue_state(vring);
  }
  virtio::QueueError queue_error(std::uint32_t vring) const noexcept {
    return group(group_of_pair(vring / 2)).queue_error(vring);
  }
  bool broken() const noexcept;
  const vhost::Device& device() const noexcept { return device_; }
  const vhost::SocketEndpoint& endpoint() const noexcept { return *endpoint_; }
  std::uint16_t thread() const { return group_thread(0); }
  // A service thread of the port is stalled: the port is failed for good.
  bool stalled() const;
  // The MAC the switch reaches the port at (configured or learned), if any.
  const std::optional<net::MacAddress>& mac() const noexcept { return mac_; }
  MacSource mac_source() const noexcept { return mac_source_; }
  // The last source MAC the control side refused the port, if any.
  const std::optional<MacRefusalRecord>& last_mac_refusal() const noexcept { return last_refusal_; }

  void set_tunables(const PortTunables& t);
  // How often the guest may ask for a learning decision (mac_learning).
  void set_learn_request_rate(const dataplane::LearnRequestRate& rate);

  // The port's guest is stopped: no ring runs (it migrated away, or went).
  bool guest_stopped() const noexcept;
  // A frontend is connected to the port's socket.
  bool frontend_connected() const noexcept;
  // What the frontend showed of a live migration (migration_evidence.hpp).
  const MigrationEvidence& migration() const noexcept { return migration_; }
  // Gives the port's MAC up: it moved to another port (the guest migrated
  // there). The caller makes the switch and the uplink follow the new port.
  void release_mac();

 private:
  void start_queue(vhost::QueueStart start) override;
  std::optional<std::uint16_t> stop_queue(std::uint32_t vring, vhost::RingStop why) override;
  void set_mtu(std::uint32_t mtu) override;
  bool announce(const std::array<std::uint8_t, 6>& mac) override;
  bool request(const net::MacAddress& mac) noexcept override;
  void decide(const net::MacAddress& mac);
  GuestPort& group_port(std::size_t g) noexcept {
    return g == 0 ? *port_ : *more_groups_[g - 1].port;
  }
  // Runs `fn(GuestPort&)` on every group's thread.
  template <class Fn>
  void each_group(const Fn& fn);
  // Tells the switch which groups have a receive queue running now, if that
  // changed (several groups only).
  void publish_rx_groups();

  struct Group {
    std::unique_ptr<GuestPort> port;
    std::uint16_t placement = 0;  // the thread it is attached to
  };

  Dataplane& dataplane_;
  boost::asio::io_context& io_;
  PortConfig config_;
  MacArbiter arbiter_;
  std::optional<net::MacAddress> mac_;
  MacSource mac_source_ = MacSource::kNone;
  std::uint64_t announcements_ = 0;  // SEND_RARP requests handled (logged at powers of two)
  std::uint64_t refusals_ = 0;
  std::uint64_t learned_ = 0;  // MACs learned (logged as refusals are: sys/log_rate.hpp)
  std::optional<MacRefusalRecord> last_refusal_;
  std::uint16_t placement_;          // the thread group 0 is attached to
  std::unique_ptr<GuestPort> port_;  // group 0
  std::vector<Group> more_groups_;   // groups 1 .. G-1
  std::vector<bool> rx_running_;     // per pair: its receive queue runs
  MigrationEvidence migration_;
  std::vector<const dataplane::Port*> rx_groups_;  // as the switch was last told
  vhost::Device device_;
  std::unique_ptr<vhost::SocketEndpoint> endpoint_;
  bool attached_ = false;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  // What request() copies on a service thread: never written after
  // construction (alive_ itself is reset by the destructor on the control
  // thread, concurrently).
  const std::weak_ptr<int> alive_token_ = alive_;
};

}  // namespace xdpvhost::controller

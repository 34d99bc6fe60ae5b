#pragma once
// Control-side owner of one uplink: the XDP steering program on the NIC, the
// NIC's unicast filter for the guests' MACs, one UplinkQueuePort (AF_XDP
// socket + UMEM) per configured queue on its service thread, and the
// interface's life: down, up, deleted and re-created are noticed through
// rtnetlink and recovered from without a restart.
//
//   interface present at start -> program attached, filter set, sockets bound
//   down                       -> ports report uplink_down drops; sockets kept
//   up                         -> traffic resumes on the same sockets
//   deleted                    -> sockets, program and filter released
//   created again              -> everything set up anew on the new ifindex
//   a failed attach or bind    -> tried again every kRetryInterval while the
//                                 interface is there (a queue that appears
//                                 with ethtool -L, a socket that let go of it)
//   program detached by others -> noticed within kRetryInterval, attached again
//                                 (a queue the kernel has not let go of yet is
//                                 tried again after 100, 200, ... ms)
//   MTU changed                -> frame limit follows within kRetryInterval
//   RX queues changed          -> with queues "all": a socket on each queue
//   (ethtool -L)                  the NIC has, at its channel notification
//                                 or within kRetryInterval; a queue it no
//                                 longer has unbound, its counters kept

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/uplink_config.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/uplink_queue_port.hpp"
#include "net/mac_address.hpp"
#include "nic/channels.hpp"
#include "nic/flood_socket.hpp"
#include "nic/link_monitor.hpp"
#include "nic/unicast_filter.hpp"
#include "nic/uplink_frame_limit.hpp"
#include "nic/xdp_program.hpp"

namespace xdpvhost::controller {

using dataplane::Dataplane;
using dataplane::Tunables;
using dataplane::UplinkQueuePort;

enum class LinkState : std::uint8_t { kUp, kDown, kAbsent };
const char* to_string(LinkState state);

class UplinkController {
 public:
  struct QueueReport {
    std::uint32_t queue = 0;
    std::uint16_t thread = 0;
    std::string bind_mode;      // zerocopy | copy | unbound
    std::string tx_checksum;    // offloaded | software | unbound
    bool multi_buffer = false;  // bound with XDP_USE_SG: frames longer than a UMEM frame
    std::uint32_t napi_id = 0;
    bool napi_requested = false, napi_active = false;
    std::string napi_reason;
  };

  // `id` is the uplink id guest ports refer to, `tunables` the global ones
  // with this uplink's overrides applied, `bpf_object` the XDP object's path
  // (empty: the default search).
  static constexpr std::chrono::seconds kRetryInterval{5};
  static constexpr std::chrono::milliseconds kFirstSoonRetry{100};

  UplinkController(Dataplane& dataplane, boost::asio::io_context& io, UplinkConfig config,
                   std::uint32_t id, const Tunables& tunables, std::string bpf_object);
  ~UplinkController();
  UplinkController(const UplinkController&) = delete;
  UplinkController& operator=(const UplinkController&) = delete;

  // Places the queue ports and, if the interface exists, sets everything up.
  // An absent interface is not an error: it is waited for.
  bool start(std::string& error);

  // Guest ports that use this uplink: frames to their MAC are steered here
  // (XDP program, unicast filter), and their MTU bounds the frame size. A
  // port without a MAC yet (learning) gets one with set_guest_mac().
  void add_guest(const std::string& port, std::optional<net::MacAddress> mac, std::uint32_t mtu);
  void set_guest_mac(const std::string& port, std::optional<net::MacAddress> mac);
  void remove_guest(const std::string& port);

  void set_tunables(const Tunables& t);

  const UplinkConfig& config() const noexcept { return config_; }
  std::uint32_t id() const noexcept { return id_; }
  LinkState link() const noexcept { return link_; }
  // With queues "all": the NIC's RX queues at the last look (0 while
  // unknown); with a list, 0.
  std::uint32_t nic_rx_queues() const noexcept { return nic_queues_; }
  std::vector<QueueReport> queue_reports() const;
  const std::vector<std::unique_ptr<UplinkQueuePort>>& ports() const noexcept { return ports_; }
  // Moves the port of NIC queue `queue` to service thread `thread`
  // (Dataplane::move); nullopt if the uplink has no port for that queue.
  std::optional<dataplane::Dataplane::Move> move_queue(std::uint32_t queue, std::uint16_t thread);
  // XDP program facts ("native, single program (...)"), empty while detached.
  std::string program_report() const;
  // Program counters (cumulative over re-attachments).
  nic::XdpSteerStats program_stats() const;
  // Filter method in use: "unicast list", "promiscuous" or "" (none).
  std::string filter_report() const;
  // The longest frame this uplink carries and the kernel or driver limit
  // that sets it: what the interface, the attached program and the bound
  // sockets allow once set up; before that, what the kernel and the
  // interface promise (nic/uplink_frame_limit.hpp).
  const nic::UplinkFrameLimit& frame_limit() const noexcept { return frame_limit_; }
  // Whether a guest of this MTU fits; `why` names the limit if not.
  bool admits_mtu(std::uint32_t mtu, std::string& why) const;

  // What the timer runs every kRetryInterval: attaches the program again if
  // someone else removed it, follows the interface's MTU, and sets up or
  // binds what a link event would not bring back (a refused attach, a queue
  // that did not exist). Runs for months: it must hold nothing when nothing
  // changed (tests run it thousands of times).
  void periodic_check();
  // Repairs run soon after a check found our program removed (retry_soon).
  std::uint64_t soon_retries() const noexcept { return soon_retries_; }

  // What a MAC is known to be outside the guests (port security: no guest
  // learns it). The node's interface (in the daemon's network namespace,
  // the uplink's own included) that has `mac` as its address, if any:
  std::optional<std::string> node_interface_with(const net::MacAddress& mac) const;
  // How long ago a frame from `mac` arrived on this uplink's interface, as
  // the XDP program remembers sources; nullopt when it does not (or no
  // program is attached).
  std::optional<std::chrono::nanoseconds> wire_source_age(const net::MacAddress& mac) const;

 private:
  bool setup(std::string& error);
  void teardown();
  // A queue port on the thread the config names (checked by start()), else
  // the least loaded.
  void add_queue_port(std::uint32_t queue);
  // Whether ports_[i]'s queue is one to bind: with queues "all", one the
  // NIC has now.
  bool wanted(std::size_t i) const noexcept;
  // Queues "all": follows the NIC's RX queue count (a port for each new
  // queue, queues gone unbound). Runs for months: holds nothing when
  // nothing changed.
  void sync_queues();
  void watch_channels();
  bool bind_queues(std::string& error);
  void unbind_queue(std::size_t i);
  void unbind_queues();
  void set_link_up(bool up);
  std::uint32_t max_frame() const;
  void watch_links();
  void on_link_events();
  void poll_program_stats();
  // The broadcast/multicast socket goes to the first bound queue (an
  // unbound one never reads it); it waits here until one is bound.
  void hand_flood_socket();
  void open_flood_socket();
  // Binds what is not bound (logged if some cannot be), then hands the
  // flood socket to a bound queue; false when some queue is not bound.
  bool bind_and_hand_flood();
  void retry_later();
  // Sets up or binds what is missing while the interface is there; true when
  // nothing is missing (or nothing can be done until a link event).
  bool repair();
  // After our program was removed by someone else and the queues could not
  // be bound again at once: repair() after `wait`, doubling, until it works
  // or the wait reaches kRetryInterval.
  void retry_soon(std::chrono::milliseconds wait);
  void follow_mtu();

  Dataplane& dataplane_;
  boost::asio::io_context& io_;
  UplinkConfig config_;
  std::uint32_t id_;
  Tunables tunables_;
  std::string bpf_object_;
  std::vector<std::unique_ptr<UplinkQueuePort>> ports_;
  bool attached_ = false;

  std::unique_ptr<nic::XdpProgram> program_;
  std::unique_ptr<nic::UnicastFilter> filter_;
  std::unique_ptr<nic::FloodSocket> flood_;  // not yet handed to a queue
  std::optional<std::size_t> flood_port_;    // the queue that holds it
  struct Guest {
    std::optional<net::MacAddress> mac;
    std::uint32_t mtu = 1500;
  };
  void steer(const net::MacAddress& mac);
  void unsteer(const net::MacAddress& mac);
  void apply_max_frame();
  // Recomputes frame_limit_ from frame_facts_ and logs it (and every guest
  // it leaves out).
  void update_frame_limit();
  // Logs (error) that a guest of this MTU has its longer frames dropped, if so.
  void report_mtu_above(const std::string& port, std::uint32_t mtu) const;
  std::map<std::string, Guest> guests_;  // by port name
  nic::UplinkFrameFacts frame_facts_;
  nic::UplinkFrameLimit frame_limit_;
  LinkState link_ = LinkState::kAbsent;
  nic::XdpSteerStats stats_base_;  // counters of programs detached before

  std::unique_ptr<nic::LinkMonitor> monitor_;
  std::optional<boost::asio::posix::stream_descriptor> monitor_wait_;
  std::unique_ptr<nic::ChannelMonitor> channels_;  // queues "all" only
  std::optional<boost::asio::posix::stream_descriptor> channels_wait_;
  std::uint32_t nic_queues_ = 0;
  std::uint64_t failed_counts_ = 0;  // for rate-limited logging
  boost::asio::steady_timer stats_timer_;
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer soon_timer_;
  std::uint64_t soon_retries_ = 0;    // repairs retry_soon() ran
  std::uint64_t failed_retries_ = 0;  // for rate-limited logging
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xdpvhost::controller

#pragma once
// Control-side owner of one uplink: the XDP steering program on the NIC, the
// NIC's unicast filter for the guests' MACs, one UplinkQueuePort (AF_XDP
// socket + UMEM) per configured queue on its service thread, and the
// interface's life: down, up, deleted and re-created are noticed through
// rtnetlink and recovered from without a restart.
//
//   interface present at start -> program attached, filter set, sockets bound
//   down                       -> ports report uplink_down drops; sockets kept
//   up                         -> sockets re-bound (fresh rings), traffic resumes
//   deleted                    -> sockets, program and filter released
//   created again              -> everything set up anew on the new ifindex

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "dataplane/mac_address.hpp"
#include "dataplane/uplink_queue_port.hpp"
#include "xsk/link_monitor.hpp"
#include "xsk/unicast_filter.hpp"
#include "xsk/xdp_program.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::dataplane {

struct UplinkConfig {
  std::string name;
  std::uint32_t id = 0;  // the uplink id guest ports refer to
  std::string interface;
  std::vector<std::uint32_t> queues{0};
  xsk::BindMode bind = xsk::BindMode::kAuto;
  std::uint32_t frame_size = 2048;
  std::uint32_t ring_size = 2048;
  std::optional<std::uint16_t> thread;
  Tunables tunables;       // resolved for this uplink
  std::string bpf_object;  // empty: the default search
};

enum class LinkState : std::uint8_t { kUp, kDown, kAbsent };
const char* to_string(LinkState state);

class UplinkController {
 public:
  struct QueueReport {
    std::uint32_t queue = 0;
    std::uint16_t thread = 0;
    std::string bind_mode;  // zerocopy | copy | unbound
    std::string bind_report;
    std::uint32_t napi_id = 0;
    bool napi_requested = false, napi_active = false;
    std::string napi_reason;
  };

  UplinkController(Dataplane& dataplane, boost::asio::io_context& io, UplinkConfig config);
  ~UplinkController();
  UplinkController(const UplinkController&) = delete;
  UplinkController& operator=(const UplinkController&) = delete;

  // Places the queue ports and, if the interface exists, sets everything up.
  // An absent interface is not an error: it is waited for.
  bool start(std::string& error);

  // Guests that use this uplink (their MAC is steered here).
  void add_guest(const MacAddress& mac, std::uint32_t mtu);
  void remove_guest(const MacAddress& mac);

  void set_tunables(const Tunables& t);

  const UplinkConfig& config() const noexcept { return config_; }
  LinkState link() const noexcept { return link_; }
  std::vector<QueueReport> queue_reports() const;
  const std::vector<std::unique_ptr<UplinkQueuePort>>& ports() const noexcept { return ports_; }
  // XDP program facts ("native, single program (...)"), empty while detached.
  std::string program_report() const;
  // Program counters (cumulative over re-attachments).
  xsk::XdpSteerStats program_stats() const;
  // Filter method in use: "unicast list", "promiscuous" or "" (none).
  std::string filter_report() const;

 private:
  bool setup(std::string& error);
  void teardown();
  bool bind_queues(std::string& error);
  void unbind_queues();
  void set_link_up(bool up);
  std::uint32_t max_frame() const;
  void watch_links();
  void on_link_events();
  void poll_program_stats();

  Dataplane& dataplane_;
  boost::asio::io_context& io_;
  UplinkConfig config_;
  std::vector<std::unique_ptr<UplinkQueuePort>> ports_;
  std::vector<std::uint16_t> threads_;
  bool attached_ = false;

  std::unique_ptr<xsk::XdpProgram> program_;
  std::unique_ptr<xsk::UnicastFilter> filter_;
  std::map<std::uint64_t, std::pair<MacAddress, std::uint32_t>> guests_;  // key -> (mac, mtu)
  LinkState link_ = LinkState::kAbsent;
  xsk::XdpSteerStats stats_base_;  // counters of programs detached before

  std::unique_ptr<xsk::LinkMonitor> monitor_;
  std::optional<boost::asio::posix::stream_descriptor> monitor_wait_;
  boost::asio::steady_timer stats_timer_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xdpvhost::dataplane

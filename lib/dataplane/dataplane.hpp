#pragma once
// The control side's handle on the datapath: the service threads, which port
// lives on which thread, and the switch table every thread forwards with.
// Used from the control thread only.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dataplane/port.hpp"
#include "dataplane/service_thread.hpp"
#include "dataplane/switch_table.hpp"
#include "dataplane/thread_watcher.hpp"
#include "dataplane/tunables.hpp"

namespace xdpvhost::dataplane {

class Dataplane {
 public:
  struct Options {
    std::uint16_t threads = 1;
    std::vector<int> cpus;  // empty, or one per thread
    Tunables tunables;
  };

  explicit Dataplane(Options options);
  ~Dataplane();
  Dataplane(const Dataplane&) = delete;
  Dataplane& operator=(const Dataplane&) = delete;

  std::uint16_t thread_count() const noexcept {
    return static_cast<std::uint16_t>(threads_.size());
  }
  ServiceThread& thread(std::uint16_t i) { return *threads_[i]; }
  const ServiceThread& thread(std::uint16_t i) const { return *threads_[i]; }

  std::uint32_t allocate_port_id() noexcept { return next_port_id_++; }
  // The thread with the fewest ports (a queue group counts as one).
  std::uint16_t least_loaded_thread() const;

  // Hands `port` to `thread` and makes it reachable by the switch (a guest
  // port at `mac`, once it has one). Returns once every thread forwards with
  // the new table.
  void attach(Port& port, std::uint16_t thread, std::optional<net::MacAddress> mac = {});
  // Hands `group`, a further queue group of the guest port `first` (already
  // attached), to `thread`. It is reached only through set_rx_groups().
  void attach_group(Port& group, std::uint16_t thread, const Port& first);
  // Frames to the guest port `first` are spread over these of its queue
  // groups (those with an enabled receive queue; empty: `first` alone).
  // Returns once every thread forwards with the new table.
  void set_rx_groups(const Port& first, const std::vector<const Port*>& groups);
  // The guest port is reached at `mac` from now on (a learned or moved
  // address); returns once every thread forwards with the new table.
  void set_mac(const Port& port, std::optional<net::MacAddress> mac);
  // Which uplinks' guests share an L2 domain (switch_table.hpp); returns
  // once every thread forwards with the new table.
  void set_l2_domains(L2Domains joined);
  // The guest port that is reached at `mac`, or nullptr.
  const Port* owner_of(const net::MacAddress& mac) const noexcept;
  // Makes `port` unreachable, then takes it off its thread. Afterwards no
  // thread touches it; the caller may destroy it.
  void detach(Port& port);
  // The thread `port` lives on (it must be attached).
  std::uint16_t thread_of(const Port& port) const;

  const Tunables& tunables() const noexcept { return tunables_; }
  // Applies to every service thread between two bursts.
  void set_tunables(const Tunables& t);

  // Starts the watcher of the service threads (ThreadWatcher): it interrupts
  // a syscall on a peer's fd once it sleeps, and checks their heartbeats.
  // Its thread inherits the caller's capabilities: the daemon calls this
  // once its own are dropped.
  void watch_threads();

 private:
  void publish_table();

  std::vector<std::unique_ptr<ServiceThread>> threads_;
  std::vector<SwitchEntry> entries_;
  L2Domains l2_domains_;
  Tunables tunables_;
  std::uint32_t next_port_id_ = 1;
  std::unique_ptr<ThreadWatcher> watcher_;
};

}  // namespace xdpvhost::dataplane

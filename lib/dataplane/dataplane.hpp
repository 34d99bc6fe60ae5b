#pragma once
// The control side's handle on the datapath: the service threads, which port
// lives on which thread, and the switch table every thread forwards with.
// Used from the control thread only.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dataplane/port.hpp"
#include "dataplane/service_thread.hpp"
#include "dataplane/switch_table.hpp"
#include "dataplane/thread_watcher.hpp"
#include "dataplane/tunables.hpp"
#include "sys/enum_names.hpp"

namespace xdpvhost::dataplane {

// How Dataplane::move ended.
enum class MoveOutcome : std::uint8_t {
  kMoved,          // the port runs on the new thread
  kAlreadyThere,   // it ran there already: nothing done
  kNotSettled,     // frames for it stayed queued (its guest took none) or
                   // its TX did not drain within kMoveDeadline: it stays
  kThreadStalled,  // the old or the new thread is stalled: it stays
  kCount
};
inline constexpr sys::EnumNames<MoveOutcome, 4> kMoveOutcomeNames{{
    {MoveOutcome::kMoved, "moved"},
    {MoveOutcome::kAlreadyThere, "already_there"},
    {MoveOutcome::kNotSettled, "not_settled"},
    {MoveOutcome::kThreadStalled, "thread_stalled"},
}};
static_assert(sys::in_enum_order(kMoveOutcomeNames, static_cast<std::size_t>(MoveOutcome::kCount)));
constexpr const char* to_string(MoveOutcome o) {
  return sys::name_of(kMoveOutcomeNames, o);
}

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
  // The thread `port` lives on (it must be attached), and that thread: where
  // the control side runs the port's commands.
  std::uint16_t thread_of(const Port& port) const;
  // Every attached port (queue groups and uplink queues included) and the
  // thread it runs on: what the rebalancer weighs.
  struct Placement {
    Port* port = nullptr;
    std::uint16_t thread = 0;
  };
  std::vector<Placement> placements() const;
  ServiceThread& owner(const Port& port) { return *threads_[thread_of(port)]; }
  const ServiceThread& owner(const Port& port) const { return *threads_[thread_of(port)]; }

  // Moves `port` (attached) to service thread `to` without losing,
  // duplicating or reordering a frame:
  //   1. the switch marks it moving: unicast frames for it wait at their
  //      senders (as for a full port), and every flood waits where it is;
  //   2. its thread lets it go (ServiceThread::release_port) once it has
  //      delivered every frame already queued for it and the port settled,
  //      asked again every kMoveRetry until kMoveDeadline;
  //   3. thread `to` takes it, and the switch reaches it there.
  // Unsettled at the deadline, it stays where it was and runs on; nothing is
  // lost either way. What waited meanwhile flows once the table is published.
  static constexpr std::chrono::milliseconds kMoveDeadline{1000};
  static constexpr std::chrono::microseconds kMoveRetry{200};
  struct Move {
    MoveOutcome outcome = MoveOutcome::kAlreadyThere;
    std::uint16_t from = 0;
    std::chrono::microseconds took{0};  // from marking it moving to the last publish
  };
  Move move(Port& port, std::uint16_t to);
  // Moves made and tried, by outcome.
  std::uint64_t moves(MoveOutcome outcome) const noexcept {
    return move_counts_[static_cast<std::size_t>(outcome)];
  }

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
  std::array<std::uint64_t, static_cast<std::size_t>(MoveOutcome::kCount)> move_counts_{};
  std::unique_ptr<ThreadWatcher> watcher_;
};

}  // namespace xdpvhost::dataplane

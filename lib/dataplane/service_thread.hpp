#pragma once
// One service thread: it owns its ports' datapath state outright and runs
//
//   loop:
//     run queued control commands
//     poll every port (guest TX queues, uplink RX rings) and the mailboxes,
//       forwarding what they hold; end the burst on every port (publish
//       used entries, coalesced interrupts, TX kicks)
//     found work           -> loop
//     idle < busy_poll_us  -> loop (busy polling; a queued command ends it)
//     else                 -> re-enable notifications, re-check the rings,
//                             sleep in epoll on kick eventfds, sockets,
//                             the command queue and the mailbox doorbell
//
// The control side reaches it only through post()/call().

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "dataplane/heartbeat.hpp"
#include "dataplane/command_queue.hpp"
#include "dataplane/counters.hpp"
#include "dataplane/forwarder.hpp"
#include "dataplane/mailbox.hpp"
#include "dataplane/port.hpp"
#include "dataplane/tunables.hpp"
#include "sys/cpu_budget.hpp"
#include "sys/event_fd.hpp"
#include "sys/peer_io_watch.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::dataplane {

class ServiceThread {
 public:
  enum class State : std::uint8_t { kStarting, kBusy, kPolling, kSleeping, kStopped };

  ServiceThread(std::uint16_t index, std::optional<int> cpu, const Tunables& tunables);
  ~ServiceThread();
  ServiceThread(const ServiceThread&) = delete;
  ServiceThread& operator=(const ServiceThread&) = delete;

  // Wires the mailboxes between all threads; before start().
  void connect(const std::vector<ServiceThread*>& all);
  void start();
  void stop();

  std::uint16_t index() const noexcept { return index_; }
  std::optional<int> cpu() const noexcept { return cpu_; }
  State state() const noexcept { return state_.load(std::memory_order_relaxed); }
  const ThreadCounters& counters() const noexcept { return counters_; }
  std::uint32_t busy_poll_us() const noexcept {
    return busy_poll_us_.load(std::memory_order_relaxed);
  }

  // ---- control side ----
  void post(CommandQueue::Command command) { commands_.post(std::move(command)); }

  // How long the control side waits for a command. A thread that has not
  // run one by then is declared stalled: reported (status, /healthz), its
  // ports failed, and every later call returns at once. Nothing the peers
  // control can stall a thread (eventfds only, non-blocking, and a syscall a
  // peer made sleep anyway is interrupted: peer_io(); guest memory guarded
  // against SIGBUS), so this is the last line, not the plan.
  static constexpr std::chrono::milliseconds kCallDeadline{5000};

  // Runs `fn` on the service thread between bursts and returns its result,
  // or R{} if the thread is (or becomes) stalled. `fn` owns what it uses
  // (captures by value: it may run after the caller gave up waiting).
  template <class Fn>
  auto call(Fn fn) -> std::invoke_result_t<Fn&> {
    using R = std::invoke_result_t<Fn&>;
    if (!running_.load() || std::this_thread::get_id() == thread_.get_id()) return fn();
    if (stalled()) return R();
    struct Task {
      explicit Task(Fn f) : fn(std::move(f)) {}
      Fn fn;
      std::chrono::nanoseconds cpu{0};  // this thread's, on fn; read once done is set
      std::promise<R> done;
    };
    auto task = std::make_shared<Task>(std::move(fn));
    auto future = task->done.get_future();
    post([task] {
      const auto start = sys::thread_cpu_time();
      if constexpr (std::is_void_v<R>) {
        task->fn();
        task->cpu = sys::thread_cpu_time() - start;
        task->done.set_value();
      } else {
        R result = task->fn();
        task->cpu = sys::thread_cpu_time() - start;
        task->done.set_value(std::move(result));
      }
    });
    if (future.wait_for(kCallDeadline) == std::future_status::ready) {
      // What the command cost this thread is charged to whom the caller
      // serves (sys::TurnCharge); set_value made the store visible.
      sys::add_thread_delegated_cpu_time(task->cpu);
      return future.get();
    }
    declare_stalled();
    return R();
  }
  bool stalled() const noexcept { return stalled_.load(std::memory_order_relaxed); }
  // Its kernel thread id once it runs (0 before), for the watcher's samples.
  pid_t tid() const noexcept { return tid_.load(std::memory_order_relaxed); }
  // Its syscalls on peers' fds, for the watcher that interrupts one that
  // sleeps, and its heartbeat (Dataplane's ThreadWatcher).
  sys::PeerIoWatch& peer_io() noexcept { return peer_io_; }
  Heartbeat& heartbeat() noexcept { return heartbeat_; }
  const Heartbeat& heartbeat() const noexcept { return heartbeat_; }
  // Asleep in epoll, stopped or not started: no round is due.
  bool owes_no_round() const noexcept {
    const State s = state();
    return s == State::kSleeping || s == State::kStopped || s == State::kStarting;
  }

  // What status and the metrics call the thread's state: busy (the last
  // burst found work), polling (busy polling), sleeping (in epoll), stalled
  // (a command did not run within kCallDeadline).
  static constexpr std::array<const char*, 4> kReportedStates{"busy", "polling", "sleeping",
                                                              "stalled"};
  const char* reported_state() const noexcept {
    if (stalled()) return "stalled";
    switch (state()) {
      case State::kPolling:
        return "polling";
      case State::kSleeping:
      case State::kStopped:
        return "sleeping";
      case State::kStarting:
      case State::kBusy:
        break;
    }
    return "busy";
  }

  // ---- on the service thread (inside commands) ----
  void attach_port(Port* port);
  void detach_port(Port* port);
  // Lets `port` go to another thread (Dataplane::move) if nothing of it is
  // in flight here: no frame for it left in this thread's mailboxes, none
  // from it in the mailboxes toward other threads, and the port settled
  // (Port::settled). False: the rounds in between deliver and
  // send what is left, and the caller asks again.
  bool release_port(Port* port);
  void set_table(std::shared_ptr<const SwitchTable> table) {
    forwarder_.set_table(std::move(table));
  }
  void set_tunables(const Tunables& t);
  const Tunables& tunables() const noexcept { return tunables_; }
  // A port's set of fds to sleep on changed.
  void wait_fds_changed() noexcept { wait_fds_dirty_ = true; }

  // Mailbox carrying frames from thread `from` to this one.
  Mailbox& inbox(std::uint16_t from) { return *inboxes_[from]; }
  // Called by another thread after pushing into our inbox.
  void ring_doorbell() noexcept;

 private:
  void run();
  void declare_stalled();
  // One round over every port; `start_ns` is when it began (CLOCK_MONOTONIC).
  unsigned poll_round(std::uint64_t start_ns);
  unsigned drain_inboxes();
  void sleep();
  void rebuild_wait_set();
  // Rebuilds the set if a port's wait fds changed; true if it did.
  bool rebuild_wait_set_if_changed();
  void watch_sleep_only_fds(bool watch);
  Port* local_port(std::uint32_t id) const noexcept;

  const std::uint16_t index_;
  const std::optional<int> cpu_;
  Tunables tunables_;
  std::atomic<std::uint32_t> busy_poll_us_;
  CommandQueue commands_;
  ThreadCounters counters_;
  std::atomic<State> state_{State::kStarting};
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stalled_{false};
  sys::PeerIoWatch peer_io_;
  Heartbeat heartbeat_;
  std::atomic<pid_t> tid_{0};
  std::thread thread_;

  std::vector<Port*> ports_;
  Forwarder forwarder_;
  std::vector<std::unique_ptr<Mailbox>> inboxes_;  // indexed by source thread
  std::vector<ServiceThread*> peers_;
  sys::EventFd doorbell_;
  sys::UniqueFd epoll_;
  bool wait_fds_dirty_ = true;
  bool needs_timer_ = false;
  bool wants_housekeeping_ = false;
  bool epoll_error_logged_ = false;
  bool sleep_only_fds_watched_ = false;
  std::uint64_t awake_since_ = 0;  // CLOCK_MONOTONIC ns of the last wakeup
  std::vector<WaitFd> wait_fds_;
};

}  // namespace xdpvhost::dataplane

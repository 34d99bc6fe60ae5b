#pragma once
// What the kernel says one thread of this process is doing: its scheduler
// state, how long it has run and waited for a CPU, where it sleeps, and its
// kernel stack (/proc/self/task/TID/{stat,schedstat,wchan,stack}).
//
// The thread watcher takes one sample when a service thread first goes
// silent and another when the silence becomes a missed heartbeat. Between
// the two, a thread that ran is stuck in a round of its own; one that waited
// for a CPU is starved by others on the machine; one that did neither sleeps
// in the kernel, and the stack says in what. Not for the datapath: it reads
// files and allocates.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace xdpvhost::sys {

struct ThreadSample {
  bool valid = false;         // the thread exists and its stat and schedstat were read
  char state = '?';           // stat's third field: R running, S sleeping, D disk sleep, ...
  std::uint64_t run_ns = 0;   // schedstat: time on a CPU
  std::uint64_t wait_ns = 0;  // schedstat: time runnable, waiting for a CPU
  std::string wchan;          // where it sleeps ("0" or empty when running)
  std::string stack;          // innermost frame first, " < " between; empty where unreadable
  std::chrono::steady_clock::time_point taken;
};

// Samples thread `tid` of this process.
ThreadSample sample_thread(pid_t tid);

// One line for a log: what the thread did between two samples of it.
std::string describe_between(const ThreadSample& before, const ThreadSample& after);

// The parsers sample_thread uses, for tests.
bool parse_stat_state(std::string_view stat, char& state);
bool parse_schedstat(std::string_view text, std::uint64_t& run_ns, std::uint64_t& wait_ns);
// "[<0>] ep_poll+0x2a1/0x2e0\n..." into "ep_poll < do_epoll_wait < ...", at
// most max_frames frames.
std::string parse_kernel_stack(std::string_view text, std::size_t max_frames = 8);

}  // namespace xdpvhost::sys

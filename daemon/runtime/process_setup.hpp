#pragma once
// The process-wide settings xdpvhostd makes first, before it opens anything:
// umask 027 (nothing it creates is world-readable or -writable; sockets get
// their mode exactly, sys::listen_unix) and RLIMIT_NOFILE raised to its hard
// limit (every guest port holds a dozen fds: eventfds, memory regions);
// large heap blocks mapped on their own (sys/heap_policy.hpp).

#include <sys/resource.h>

#include <string>

namespace xdpvhost::daemon {

inline constexpr mode_t kDaemonUmask = 027;

// Sets the umask, raises the soft fd limit and sets the heap policy.
// Returns a line for the log.
std::string set_up_process();

}  // namespace xdpvhost::daemon

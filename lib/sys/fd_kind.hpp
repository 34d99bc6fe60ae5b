#pragma once
// What an fd a peer handed over really is, before it is trusted with a job.

namespace xdpvhost::sys {

// An eventfd (its /proc/self/fd link reads "anon_inode:[eventfd]").
bool is_eventfd(int fd) noexcept;

// O_NONBLOCK on the fd's open file description; false on failure.
bool set_nonblocking(int fd) noexcept;

}  // namespace xdpvhost::sys

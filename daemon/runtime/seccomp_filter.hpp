#pragma once
// The seccomp allow-list xdpvhostd runs under once it is set up (config
// security.seccomp, default on; --no-seccomp turns it off for debugging).
//
// Shape: the default action is SCMP_ACT_TRAP, so any system call not on the
// list raises SIGSYS; the handler writes one line naming the call to stderr
// ("seccomp: forbidden system call 59 (execve): killed") and the process
// dies of SIGSYS. The list is what the daemon does at run time: memory
// (guest memory mmap/munmap/madvise, malloc), files (config reload, state
// file, /proc for metrics), unix, inet, netlink, AF_XDP and AF_PACKET
// sockets, epoll, eventfd, timerfd, futexes, signals, bpf(2) (uplinks at
// run time), fcntl (F_GET_SEALS of guest memory fds), openat2, capget.
// Never: exec, ptrace, mount, module loading, namespaces, setuid and the
// like, kexec, reboot, keyrings, userfaultfd, io_uring. clone only with
// CLONE_THREAD (clone3 answers ENOSYS, so glibc uses clone). The filter is
// synchronised to every thread (TSYNC), after PR_SET_NO_NEW_PRIVS.

#include <string>
#include <vector>

namespace xdpvhost::daemon {

// The names of the allowed system calls (as libseccomp spells them).
const std::vector<std::string>& seccomp_allowed_syscalls();

// Sets PR_SET_NO_NEW_PRIVS and loads the filter into every thread. Returns
// "" or the problem.
std::string install_seccomp_filter();

}  // namespace xdpvhost::daemon

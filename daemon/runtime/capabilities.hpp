#pragma once
// The capabilities xdpvhostd keeps after set-up: what run-time changes
// (uplink.add/remove, an uplink's interface coming back, port.add, a SIGHUP
// reload) still need, and nothing else. Everything else is dropped from
// every thread's effective, permitted and inheritable sets, the ambient set
// and, where CAP_SETPCAP allows, the bounding set.
//
//   NET_ADMIN   attach/detach XDP, SO_PREFER_BUSY_POLL / SO_BUSY_POLL_BUDGET,
//               the netlink unicast filter
//   NET_RAW     AF_XDP sockets, the AF_PACKET flood socket
//   IPC_LOCK    UMEM pinned beyond RLIMIT_MEMLOCK
//   SYS_ADMIN   bpf(2): loading the program, reading attached programs back
//               by id (libxdp's detach and stale-program check), map updates;
//               BPF + PERFMON instead where SYS_ADMIN is not held
//   DAC_OVERRIDE  only as root: frontends' sockets in other owners'
//               directories (the DRA plugin's per-claim directories are
//               QEMU's, 107:107 0750); a non-root daemon gets ACLs instead
//   CHOWN       only with control.group: the socket re-made at a reload
//   NET_BIND_SERVICE  only with a metrics port below 1024

#include <string>
#include <vector>

namespace xdpvhost::daemon {

struct CapabilityNeeds {
  bool control_group = false;       // control.group is set
  bool privileged_metrics = false;  // metrics.listen's port < 1024
};

// The capability names to keep (CAP_xxx values as libcap names them),
// given what the process holds now.
std::vector<std::string> capabilities_to_keep(const CapabilityNeeds& needs);

// Drops every capability but `keep` in the calling thread. Returns "" or the
// problem.
std::string drop_capabilities(const std::vector<std::string>& keep);

// "cap_net_admin,cap_net_raw" ...: the calling thread's effective set.
std::string effective_capabilities();

}  // namespace xdpvhost::daemon

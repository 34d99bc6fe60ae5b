#pragma once
// xdpvhostctl's exit codes. Scripts rely on them: keep them stable and keep
// the --help text and docs/operating.md in step.

namespace xdpvhost::ctl {

enum ExitCode : int {
  kExitOk = 0,           // the daemon carried the request out
  kExitRpcError = 1,     // the daemon answered with a JSON-RPC error (code printed)
  kExitUsage = 2,        // bad command line (unknown command, missing or malformed argument)
  kExitUnreachable = 3,  // no daemon: cannot connect, connection lost, no reply in time
  kExitUnhealthy = 4,    // `health`: the daemon answered that it is not ready
};

inline constexpr const char* kExitCodeHelp =
    "Exit codes:\n"
    "  0  ok\n"
    "  1  the daemon answered with a JSON-RPC error (its code and message are printed)\n"
    "  2  usage error (unknown command, missing or malformed argument)\n"
    "  3  cannot reach the daemon (no socket, connection refused or lost, no reply in time)\n"
    "  4  health: the daemon is not ready (its problems are printed)\n";

}  // namespace xdpvhost::ctl

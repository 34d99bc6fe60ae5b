#pragma once
// Tells the service manager how the daemon is doing (sd_notify, libsystemd):
// READY=1 once the sockets are bound and set-up is done, RELOADING=1 while
// a SIGHUP reload runs, STOPPING=1 on shutdown. Nothing happens without
// $NOTIFY_SOCKET (not started by systemd with Type=notify).

#include <string>

namespace xdpvhost::daemon {

// Sends `state` ("READY=1\nSTATUS=..."); false if there is no service
// manager to tell or sending failed.
bool notify_service_manager(const std::string& state);

}  // namespace xdpvhost::daemon

#include "runtime/service_notifier.hpp"

#include <systemd/sd-daemon.h>

namespace xdpvhost::daemon {

bool notify_service_manager(const std::string& state) {
  // unset_environment 0: later notifications (STOPPING=1) use it again.
  return sd_notify(0, state.c_str()) > 0;
}

}  // namespace xdpvhost::daemon

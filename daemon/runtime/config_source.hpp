#pragma once
// Where the running config came from and how its reloads went: what
// status's "config" shows, so that an operator who edited a ConfigMap sees
// whether the edit was applied, refused, or waits for a restart.

#include <cstdint>
#include <string>
#include <vector>

namespace xdpvhost::daemon {

struct ConfigSource {
  std::string path;                         // --config
  bool following = false;                   // --follow-config: changes applied as they land
  std::uint64_t reloads = 0;                // versions of the file applied (SIGHUP or followed)
  std::string last_error;                   // why the newest version was not loaded; "" if it was
  std::vector<std::string> problems;        // what the last applied reload could not do
  std::vector<std::string> restart_needed;  // sections changed that take effect at the next start
};

}  // namespace xdpvhost::daemon

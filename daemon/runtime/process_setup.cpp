#include "runtime/process_setup.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "sys/heap_policy.hpp"

namespace xdpvhost::daemon {

std::string set_up_process() {
  ::umask(kDaemonUmask);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return std::string("cannot read RLIMIT_NOFILE: ") + std::strerror(errno);
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
      return "cannot raise RLIMIT_NOFILE to " + std::to_string(limit.rlim_max) + ": " +
             std::strerror(errno);
  }
  const bool mapped = sys::keep_large_blocks_mapped();
  return "umask 027, open files limit " + std::to_string(limit.rlim_cur) +
         (before != limit.rlim_cur ? " (raised from " + std::to_string(before) + ")" : "") +
         (mapped ? ", heap blocks of " + std::to_string(sys::kHeapMmapThreshold / 1024) +
                       " KiB and more mapped on their own"
                 : ", the allocator keeps its own heap policy");
}

}  // namespace xdpvhost::daemon

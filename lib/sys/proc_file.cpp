#include "sys/proc_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {

std::optional<std::string> read_small_file(const char* path) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (1 << 20)) break;
  }
  return text;
}

}  // namespace xdpvhost::sys

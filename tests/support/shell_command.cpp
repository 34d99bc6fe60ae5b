#include "shell_command.hpp"

#include <sys/wait.h>

#include <cstdio>

namespace xdpvhost::test_support {

int run_shell(const std::string& command, std::string* output) {
  const std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  std::string out;
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (output != nullptr) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace xdpvhost::test_support

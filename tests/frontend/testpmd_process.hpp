#pragma once
// A dpdk-testpmd child process for tests: started with a pipe on stdin (it
// quits when the pipe closes), output to a log file, killed with its parent
// (PR_SET_PDEATHSIG) and, at the latest, by the destructor.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::testing {

class TestpmdProcess {
 public:
  // argv[0] is looked up in PATH. Throws std::system_error if fork fails.
  TestpmdProcess(std::vector<std::string> argv, std::string log_path);
  ~TestpmdProcess();
  TestpmdProcess(const TestpmdProcess&) = delete;
  TestpmdProcess& operator=(const TestpmdProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  bool running();
  // Closes stdin (testpmd's "Press enter to exit"), waits, then SIGTERM and
  // SIGKILL. Returns the exit status as waitpid reports it (-1 if unknown).
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // The log so far (for failure messages).
  std::string log() const;
  // Waits until the log contains `text` or the process ends / times out.
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  sys::UniqueFd stdin_;
  std::string log_path_;
  int status_ = -1;
};

}  // namespace xdpvhost::testing

#include "frontend/testpmd_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

namespace xdpvhost::testing {

TestpmdProcess::TestpmdProcess(std::vector<std::string> argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::system_error(errno, std::generic_category(), "open " + log_path_);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0) {
    // Child: die with the test, stdin from the pipe, output to the log.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(pipefd[0], 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipefd[0]);
  ::close(log_fd);
  stdin_.reset(pipefd[1]);
}

TestpmdProcess::~TestpmdProcess() {
  stop(std::chrono::milliseconds(3000));
}

bool TestpmdProcess::running() {
  if (pid_ <= 0) return false;
  int status;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = status;
    pid_ = -1;
    return false;
  }
  return r == 0;
}

int TestpmdProcess::stop(std::chrono::milliseconds grace) {
  stdin_.reset();
  if (pid_ <= 0) return status_;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  int status;
  if (::waitpid(pid_, &status, 0) == pid_) status_ = status;
  pid_ = -1;
  return status_;
}

std::string TestpmdProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool TestpmdProcess::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (log().find(text) != std::string::npos) return true;
    if (!running() || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace xdpvhost::testing

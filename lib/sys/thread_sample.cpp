#include "sys/thread_sample.hpp"

#include <charconv>
#include <cstdio>
#include <sstream>

#include "sys/proc_file.hpp"

namespace xdpvhost::sys {
namespace {

std::string read_proc(pid_t tid, const char* file) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/" + file;
  return read_small_file(path.c_str()).value_or(std::string{});
}

const char* state_name(char state) {
  switch (state) {
    case 'R':
      return "running or runnable";
    case 'S':
      return "sleeping";
    case 'D':
      return "in uninterruptible sleep";
    case 'T':
    case 't':
      return "stopped";
    case 'Z':
      return "exited";
    default:
      return "unknown";
  }
}

double ms(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

}  // namespace

bool parse_stat_state(std::string_view stat, char& state) {
  // "TID (comm) S ...": comm may hold spaces and parentheses; the state
  // follows the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || close + 2 >= stat.size() || stat[close + 1] != ' ')
    return false;
  state = stat[close + 2];
  return true;
}

bool parse_schedstat(std::string_view text, std::uint64_t& run_ns, std::uint64_t& wait_ns) {
  // "RUN_NS WAIT_NS TIMESLICES\n"
  const char* p = text.data();
  const char* end = text.data() + text.size();
  std::uint64_t run = 0, wait = 0;
  auto r = std::from_chars(p, end, run);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != ' ') return false;
  r = std::from_chars(r.ptr + 1, end, wait);
  if (r.ec != std::errc{}) return false;
  run_ns = run;
  wait_ns = wait;
  return true;
}

std::string parse_kernel_stack(std::string_view text, std::size_t max_frames) {
  std::string out;
  std::size_t frames = 0;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line) && frames < max_frames;) {
    // "[<0>] name+0xoff/0xlen": the name, without the offsets.
    const auto start = line.find("] ");
    if (start == std::string::npos) continue;
    std::string name = line.substr(start + 2);
    if (const auto plus = name.find('+'); plus != std::string::npos) name.resize(plus);
    if (name.empty()) continue;
    if (!out.empty()) out += " < ";
    out += name;
    ++frames;
  }
  return out;
}

ThreadSample sample_thread(pid_t tid) {
  ThreadSample s;
  s.taken = std::chrono::steady_clock::now();
  s.valid = parse_stat_state(read_proc(tid, "stat"), s.state) &&
            parse_schedstat(read_proc(tid, "schedstat"), s.run_ns, s.wait_ns);
  if (!s.valid) return s;
  s.wchan = read_proc(tid, "wchan");
  // Root with CAP_SYS_ADMIN only (the daemon keeps it); empty otherwise.
  s.stack = parse_kernel_stack(read_proc(tid, "stack"));
  return s;
}

std::string describe_between(const ThreadSample& before, const ThreadSample& after) {
  if (!after.valid) return "its state cannot be read";
  std::ostringstream out;
  out << "state " << after.state << " (" << state_name(after.state) << ")";
  if (before.valid && after.run_ns >= before.run_ns && after.wait_ns >= before.wait_ns) {
    const auto over =
        std::chrono::duration_cast<std::chrono::nanoseconds>(after.taken - before.taken).count();
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "; in the last %.0f ms it ran %.1f ms and waited %.1f ms for a CPU",
                  ms(static_cast<std::uint64_t>(over)), ms(after.run_ns - before.run_ns),
                  ms(after.wait_ns - before.wait_ns));
    out << buf;
  }
  if (!after.wchan.empty() && after.wchan != "0") out << "; sleeps in " << after.wchan;
  if (!after.stack.empty()) out << "; kernel stack: " << after.stack;
  return out.str();
}

}  // namespace xdpvhost::sys

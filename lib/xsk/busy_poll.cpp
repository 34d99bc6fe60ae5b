#include "xsk/busy_poll.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

namespace xdpvhost::xsk {

namespace {

struct Option {
  int name;
  const char* label;
};
constexpr Option kUsecs{SO_BUSY_POLL, "SO_BUSY_POLL"};
constexpr Option kBudget{SO_BUSY_POLL_BUDGET, "SO_BUSY_POLL_BUDGET"};
constexpr Option kPrefer{SO_PREFER_BUSY_POLL, "SO_PREFER_BUSY_POLL"};

int get_int(int fd, int name, int& value) {
  socklen_t len = sizeof value;
  value = 0;
  return ::getsockopt(fd, SOL_SOCKET, name, &value, &len) == 0 ? 0 : -errno;
}

int set_int(int fd, int name, int value) {
  return ::setsockopt(fd, SOL_SOCKET, name, &value, sizeof value) == 0 ? 0 : -errno;
}

// Sets one option and reads it back where the kernel allows. Empty string
// on success.
std::string set_verified(int fd, const Option& opt, int value) {
  if (const int err = set_int(fd, opt.name, value); err != 0) {
    return std::string(opt.label) + "=" + std::to_string(value) +
           " refused: " + std::strerror(-err);
  }
  if (opt.name == SO_BUSY_POLL_BUDGET) return {};  // no getsockopt for it
  int back = 0;
  if (const int err = get_int(fd, opt.name, back); err != 0) {
    return std::string(opt.label) + " unreadable: " + std::strerror(-err);
  }
  if (back != value) {
    return std::string(opt.label) + "=" + std::to_string(value) + " reads back " +
           std::to_string(back);
  }
  return {};
}

// Restores one option if it differs from `previous`; if the kernel refuses
// (raising needs CAP_NET_ADMIN), turns it off instead. Appends what happened
// to `reason`.
void restore(int fd, const Option& opt, int previous, std::string& reason) {
  int current = 0;
  if (opt.name != SO_BUSY_POLL_BUDGET && get_int(fd, opt.name, current) == 0 &&
      current == previous) {
    return;
  }
  if (set_int(fd, opt.name, previous) == 0) return;
  const int err = set_int(fd, opt.name, 0);
  reason += std::string("; restoring ") + opt.label + "=" + std::to_string(previous) +
            " refused, " + (err == 0 ? "set to 0" : "left as is");
}

}  // namespace

int read_busy_poll(int fd, BusyPollSettings& out) noexcept {
  int usecs = 0, prefer = 0;
  if (int err = get_int(fd, kUsecs.name, usecs); err != 0) return err;
  if (int err = get_int(fd, kPrefer.name, prefer); err != 0) return err;
  out.usecs = static_cast<std::uint32_t>(usecs);
  out.prefer = prefer != 0;
  return 0;
}

BusyPollOutcome apply_busy_poll(int fd, const BusyPollConfig& config) {
  BusyPollOutcome outcome;
  BusyPollSettings previous;
  if (const int err = read_busy_poll(fd, previous); err != 0) {
    outcome.reason = std::string("busy-poll options unreadable: ") + std::strerror(-err);
    return outcome;
  }

  const struct {
    const Option& opt;
    int value;
    int previous;
  } steps[] = {
      {kUsecs, static_cast<int>(config.usecs), static_cast<int>(previous.usecs)},
      {kBudget, static_cast<int>(config.budget), 0},
      {kPrefer, config.prefer ? 1 : 0, previous.prefer ? 1 : 0},
  };
  int done = 0;
  for (const auto& step : steps) {
    // Setting an option to its current value still goes through the kernel's
    // permission check (SO_PREFER_BUSY_POLL=1 always needs CAP_NET_ADMIN).
    outcome.reason = set_verified(fd, step.opt, step.value);
    if (!outcome.reason.empty()) break;
    ++done;
  }
  if (done == 3) {
    outcome.applied = true;
    outcome.budget = config.budget;
  } else {
    // Undo in reverse order, including the step that failed half-way.
    for (int i = done; i >= 0; --i) {
      // A refused budget left the (unreadable) value unchanged: nothing to undo.
      if (i == done && steps[i].opt.name == SO_BUSY_POLL_BUDGET) continue;
      restore(fd, steps[i].opt, steps[i].previous, outcome.reason);
    }
    outcome.reason += "; busy polling rolled back";
  }
  (void)read_busy_poll(fd, outcome.in_effect);
  (void)read_napi_id(fd, outcome.napi_id);
  return outcome;
}

int read_napi_id(int fd, std::uint32_t& id) noexcept {
  int value = 0;
  if (const int err = get_int(fd, SO_INCOMING_NAPI_ID, value); err != 0) return err;
  id = static_cast<std::uint32_t>(value);
  return 0;
}

int drive_napi(int fd) noexcept {
  return ::recvfrom(fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr) < 0 ? -errno : 0;
}

}  // namespace xdpvhost::xsk

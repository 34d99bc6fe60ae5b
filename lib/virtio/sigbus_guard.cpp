#include "virtio/sigbus_guard.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace xdpvhost::virtio {
namespace {

struct Slot {
  std::atomic<std::uintptr_t> start{0};
  std::atomic<std::uintptr_t> end{0};  // 0: free
  std::atomic<std::atomic<bool>*> flag{nullptr};
};

std::array<Slot, GuardedRange::kSlots> g_slots;
std::mutex g_registry;  // add/remove only (control thread); never the handler
struct sigaction g_previous;
bool g_installed = false;

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const std::uintptr_t end = s.end.load(std::memory_order_acquire);
    if (end == 0) continue;
    const std::uintptr_t start = s.start.load(std::memory_order_relaxed);
    if (addr < start || addr >= end) continue;
    // The file under this mapping shrank: give the range anonymous memory so
    // the access (and every later one) completes, and tell the port.
    void* fresh = ::mmap(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE,
                         MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fresh == MAP_FAILED) break;
    if (std::atomic<bool>* flag = s.flag.load(std::memory_order_relaxed))
      flag->store(true, std::memory_order_relaxed);
    return;
  }
  // Not guest memory: whatever handled SIGBUS before us, else the default
  // action (the faulting access is repeated and kills the process).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) return g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != nullptr) {
    return g_previous.sa_handler(signal);
  }
  ::signal(SIGBUS, SIG_DFL);
}

bool install(std::string& error) {
  if (g_installed) return true;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGBUS, &sa, &g_previous) != 0) {
    error = std::string("cannot install the SIGBUS handler: ") + std::strerror(errno);
    return false;
  }
  g_installed = true;
  return true;
}

}  // namespace

GuardedRange GuardedRange::add(void* start, std::size_t length, std::atomic<bool>* flag,
                               std::string& error) {
  std::lock_guard lock(g_registry);
  if (!install(error)) return {};
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[static_cast<std::size_t>(i)];
    if (s.end.load(std::memory_order_relaxed) != 0) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(start);
    s.start.store(begin, std::memory_order_relaxed);
    s.flag.store(flag, std::memory_order_relaxed);
    s.end.store(begin + length, std::memory_order_release);
    return GuardedRange(i);
  }
  error = "every one of the " + std::to_string(kSlots) + " guarded memory slots is in use";
  return {};
}

GuardedRange& GuardedRange::operator=(GuardedRange&& o) noexcept {
  if (this != &o) {
    reset();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void GuardedRange::reset() noexcept {
  if (slot_ < 0) return;
  std::lock_guard lock(g_registry);
  Slot& s = g_slots[static_cast<std::size_t>(slot_)];
  s.end.store(0, std::memory_order_release);
  s.flag.store(nullptr, std::memory_order_relaxed);
  slot_ = -1;
}

}  // namespace xdpvhost::virtio

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
  std::atomic<std::uint32_t> sequence{0};  // odd while a writer changes the slot
  std::atomic<std::uintptr_t> start{0};
  std::atomic<std::uintptr_t> end{0};  // 0: free
  std::atomic<std::atomic<bool>*> flag{nullptr};
};

std::array<Slot, GuardedRange::kSlots> g_slots;
std::mutex g_registry;  // add/remove only (control thread); never the handler
struct sigaction g_previous;
bool g_installed = false;

// A slot's range and flag as one registration left them (a seqlock read);
// false if the slot is free or was being changed.
bool read_slot(const Slot& s, std::uintptr_t& start, std::uintptr_t& end,
               std::atomic<bool>*& flag) noexcept {
  const std::uint32_t before = s.sequence.load(std::memory_order_acquire);
  if (before & 1u) return false;
  end = s.end.load(std::memory_order_relaxed);
  start = s.start.load(std::memory_order_relaxed);
  flag = s.flag.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return end != 0 && s.sequence.load(std::memory_order_relaxed) == before;
}

// The writer's side, under g_registry.
template <class Change>
void write_slot(Slot& s, Change change) noexcept {
  const std::uint32_t sequence = s.sequence.load(std::memory_order_relaxed);
  s.sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  change();
  s.sequence.store(sequence + 2, std::memory_order_release);
}

// Gives the guarded mapping holding `addr` anonymous memory and raises its
// flag; false if no slot holds it (or the remap failed).
bool recover(std::uintptr_t addr) noexcept {
  for (const Slot& s : g_slots) {
    std::uintptr_t start = 0;
    std::uintptr_t end = 0;
    std::atomic<bool>* flag = nullptr;
    if (!read_slot(s, start, end, flag) || addr < start || addr >= end) continue;
    // The file under this mapping shrank: give the range anonymous memory so
    // the access (and every later one) completes, and tell the port.
    void* fresh = ::mmap(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE,
                         MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (fresh == MAP_FAILED) return false;
    if (flag != nullptr) flag->store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  // Only a fault is recovered: si_code <= 0 is kill(), tgkill() or sigqueue().
  if (info->si_code > 0 && recover(reinterpret_cast<std::uintptr_t>(info->si_addr))) return;
  // Not guest memory: whatever handled SIGBUS before us, else the default
  // action (raised again, it is delivered as the handler returns: kills).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) return g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != nullptr) {
    return g_previous.sa_handler(signal);
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
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
    write_slot(s, [&] {
      s.start.store(begin, std::memory_order_relaxed);
      s.flag.store(flag, std::memory_order_relaxed);
      s.end.store(begin + length, std::memory_order_relaxed);
    });
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
  write_slot(s, [&] {
    s.end.store(0, std::memory_order_relaxed);
    s.flag.store(nullptr, std::memory_order_relaxed);
  });
  slot_ = -1;
}

}  // namespace xdpvhost::virtio

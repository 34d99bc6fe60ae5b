#pragma once
// Guest memory and dirty logs are mapped with a guard: a SIGBUS on an access
// to them -- the file was cut short under the mapping, or lost pages to a
// punched hole that cannot be refilled (a hugetlbfs pool run dry) -- is
// recovered by replacing the whole mapping with anonymous memory (the access
// completes, reading zeros) and raising the memory's flag. The port's queues
// then break (QueueError::kMemoryTruncated) and no other port notices. A
// SIGBUS anywhere else, or one not raised by a fault (kill, sigqueue), is a
// real crash: the handler steps aside and the signal kills.
//
// The registry is a fixed array of slots, written by the control thread
// (add/remove around a mapping's life, under a mutex) and read by the signal
// handler on any thread. Each slot is a seqlock: a writer makes its sequence
// odd, changes the range, and makes it even again; the handler uses a slot
// only if it read the same even sequence before and after the range, so it
// never pairs one registration's start with another's end.

#include <atomic>
#include <cstddef>
#include <string>

namespace xdpvhost::virtio {

class GuardedRange {
 public:
  GuardedRange() = default;
  // Registers [start, start + length); `flag` is raised if it is recovered.
  // Invalid (and `error` set) when the handler cannot be installed or every
  // slot is taken.
  static GuardedRange add(void* start, std::size_t length, std::atomic<bool>* flag,
                          std::string& error);
  GuardedRange(GuardedRange&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  GuardedRange& operator=(GuardedRange&& o) noexcept;
  GuardedRange(const GuardedRange&) = delete;
  GuardedRange& operator=(const GuardedRange&) = delete;
  ~GuardedRange() { reset(); }

  bool valid() const noexcept { return slot_ >= 0; }
  void reset() noexcept;

  // Slots in the registry: a port holds at most 8 regions and a log, twice
  // while a new memory table replaces the old one: room for 200 such ports.
  static constexpr int kSlots = 4096;

 private:
  explicit GuardedRange(int slot) noexcept : slot_(slot) {}
  int slot_ = -1;
};

}  // namespace xdpvhost::virtio

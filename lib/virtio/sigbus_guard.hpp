#pragma once
// Guest memory the frontend could still truncate (a hugetlbfs or tmpfs file,
// a memfd that does not allow sealing) is mapped with a guard: a SIGBUS on an
// access to it -- the file was cut short under the mapping -- is recovered by
// replacing the whole mapping with anonymous memory (the access completes,
// reading zeros) and raising the memory's flag. The port's queues then break
// (QueueError::kMemoryTruncated) and no other port notices. A SIGBUS anywhere
// else is a real crash: the handler steps aside and the signal kills.
//
// The registry is a fixed array of slots, written by the control thread
// (add/remove around a mapping's life) and read by the signal handler on any
// thread; a slot is published with a release store of its end address and
// cleared before the range is unmapped.

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

  // Slots in the registry: more than the memory regions of every port.
  static constexpr int kSlots = 1024;

 private:
  explicit GuardedRange(int slot) noexcept : slot_(slot) {}
  int slot_ = -1;
};

}  // namespace xdpvhost::virtio

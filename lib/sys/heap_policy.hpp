#pragma once
// How the daemon's heap gives memory back to the kernel.
//
// glibc maps a large allocation (128 KiB and up) on its own, but raises
// that threshold to the size of the first such block freed (up to 32 MiB).
// From then on a port's large buffers (its receive backlog, its rings'
// scratch, an uplink queue's frame pool) come from the heap's arenas, and
// what they touched stays resident after the port goes: RSS follows the
// largest peak of ports seen (64 guests started at once), not the ports
// there are. Fixing the threshold keeps every large buffer mapped on its
// own and unmapped when freed, so memory follows the live ports.
//
// Small blocks stay in the arenas. Ports and guests that go leave holes
// among them, which glibc keeps resident (on free it trims only the top of
// an arena); give_back_free_heap() releases every whole free page in every
// arena (daemon/runtime/heap_trimmer.hpp calls it when enough is free).

#if defined(__SANITIZE_ADDRESS__)
#define XDPVHOST_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XDPVHOST_SANITIZER_ALLOCATOR 1
#endif
#endif

namespace xdpvhost::sys {

// A sanitizer build replaces malloc: glibc's arenas hold nothing of ours,
// and neither call below changes anything.
#ifdef XDPVHOST_SANITIZER_ALLOCATOR
inline constexpr bool kSanitizerAllocator = true;
#else
inline constexpr bool kSanitizerAllocator = false;
#endif

inline constexpr unsigned kHeapMmapThreshold = 128 * 1024;  // glibc's initial value

// Sets the policy for the process; false if the allocator refused it.
bool keep_large_blocks_mapped() noexcept;

// Hands the free pages of every arena back to the kernel (malloc_trim);
// true if any was. Walks the arenas under their locks: control path only.
bool give_back_free_heap() noexcept;

}  // namespace xdpvhost::sys

#include "sys/heap_policy.hpp"

#include <malloc.h>

namespace xdpvhost::sys {

bool keep_large_blocks_mapped() noexcept {
  if (kSanitizerAllocator) return false;
  // Setting M_MMAP_THRESHOLD also turns glibc's dynamic adjustment of it
  // (and of M_TRIM_THRESHOLD) off.
  return ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapMmapThreshold)) == 1;
}

bool give_back_free_heap() noexcept {
  return !kSanitizerAllocator && ::malloc_trim(0) == 1;
}

}  // namespace xdpvhost::sys

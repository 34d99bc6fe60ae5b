#pragma once
// RAII owner of one mmap()ed range.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace xdpvhost::sys {

class MemoryMapping {
 public:
  MemoryMapping() = default;
  MemoryMapping(void* addr, std::size_t length) noexcept
      : addr_(static_cast<std::uint8_t*>(addr)), length_(length) {}
  MemoryMapping(const MemoryMapping&) = delete;
  MemoryMapping& operator=(const MemoryMapping&) = delete;
  MemoryMapping(MemoryMapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), length_(std::exchange(o.length_, 0)) {}
  MemoryMapping& operator=(MemoryMapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      length_ = std::exchange(o.length_, 0);
    }
    return *this;
  }
  ~MemoryMapping() { reset(); }

  std::uint8_t* data() const noexcept { return addr_; }
  std::size_t size() const noexcept { return length_; }
  bool valid() const noexcept { return addr_ != nullptr; }

  void reset() noexcept {
    if (addr_ != nullptr) ::munmap(addr_, length_);
    addr_ = nullptr;
    length_ = 0;
  }

 private:
  std::uint8_t* addr_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace xdpvhost::sys

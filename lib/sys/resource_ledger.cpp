#include "sys/resource_ledger.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string_view>

#include "sys/unique_fd.hpp"

#include "sys/heap_policy.hpp"
#ifdef XDPVHOST_SANITIZER_ALLOCATOR
#include <sanitizer/allocator_interface.h>
#endif

namespace xdpvhost::sys {

namespace {

struct DirClose {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};

// Reads a small /proc file into `buf`; the text read, empty on failure.
std::string_view read_proc(int dirfd, const char* path, char* buf, std::size_t size) {
  UniqueFd fd(::openat(dirfd, path, O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::size_t used = 0;
  while (used < size) {
    const ssize_t n = ::read(fd.get(), buf + used, size - used);
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
  }
  return {buf, used};
}

// The number after "key:" on its line of a /proc text (fdinfo, status).
std::uint64_t field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    if (at == 0 || text[at - 1] == '\n') break;
    at += key.size();
  }
  if (at == std::string_view::npos) return 0;
  std::size_t p = at + key.size();
  while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
  std::uint64_t value = 0;
  std::from_chars(text.data() + p, text.data() + text.size(), value);
  return value;
}

void add_bpf_object(std::vector<BpfObject>& into, const BpfObject& o) {
  if (o.id != 0 &&
      std::none_of(into.begin(), into.end(), [&](const BpfObject& x) { return x.id == o.id; }))
    into.push_back(o);
}

}  // namespace

std::uint32_t ResourceLedger::fds_total() const noexcept {
  return std::accumulate(fds.begin(), fds.end(), 0u);
}

HeapBytes heap_bytes() noexcept {
#ifdef XDPVHOST_SANITIZER_ALLOCATOR
  // The sanitizer replaces malloc; glibc's arenas hold nothing of ours.
  return HeapBytes{__sanitizer_get_current_allocated_bytes(), __sanitizer_get_free_bytes()};
#else
  // Summed over every arena: chunks in use (uordblks) and chunks too large
  // for an arena, mapped on their own (hblkhd); free chunks (fordblks).
  const struct mallinfo2 m = ::mallinfo2();
  return HeapBytes{m.uordblks + m.hblkhd, m.fordblks};
#endif
}

ResourceLedger take_resource_ledger() {
  ResourceLedger l;
  char buf[4096];
  if (std::unique_ptr<DIR, DirClose> dir(::opendir("/proc/self/fd")); dir) {
    const int own = ::dirfd(dir.get());
    UniqueFd fdinfo(::open("/proc/self/fdinfo", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    while (const dirent* e = ::readdir(dir.get())) {
      int fd = -1;
      const std::string_view name(e->d_name);
      if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{} ||
          fd == own || fd == fdinfo.get())
        continue;
      const ssize_t n = ::readlinkat(own, e->d_name, buf, sizeof buf);
      if (n <= 0) continue;  // closed meanwhile
      const FdKind kind = classify_fd_link(std::string_view(buf, static_cast<std::size_t>(n)));
      ++l.fds[static_cast<std::size_t>(kind)];
      if ((kind == FdKind::kBpfProg || kind == FdKind::kBpfMap) && fdinfo) {
        const std::string_view info = read_proc(fdinfo.get(), e->d_name, buf, sizeof buf);
        if (kind == FdKind::kBpfProg)
          add_bpf_object(l.bpf_programs,
                         BpfObject{static_cast<std::uint32_t>(field(info, "prog_id:")),
                                   static_cast<std::uint32_t>(field(info, "prog_type:")),
                                   field(info, "memlock:")});
        else
          add_bpf_object(l.bpf_maps, BpfObject{static_cast<std::uint32_t>(field(info, "map_id:")),
                                               static_cast<std::uint32_t>(field(info, "map_type:")),
                                               field(info, "memlock:")});
      }
    }
  }
  auto by_id = [](const BpfObject& a, const BpfObject& b) { return a.id < b.id; };
  std::sort(l.bpf_programs.begin(), l.bpf_programs.end(), by_id);
  std::sort(l.bpf_maps.begin(), l.bpf_maps.end(), by_id);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) l.fd_limit = limit.rlim_cur;
  l.mapped = mapped_totals();
  const std::string_view status = read_proc(AT_FDCWD, "/proc/self/status", buf, sizeof buf);
  l.threads = static_cast<std::uint32_t>(field(status, "Threads:"));
  l.rss_bytes = field(status, "VmRSS:") * 1024;
  l.heap = heap_bytes();
  return l;
}

}  // namespace xdpvhost::sys

#pragma once
// Reading a small text file whole (/proc's and /sys's): the one reader for
// what is read now and then, off the datapath (it allocates). The resource
// ledger reads fdinfo into a caller's buffer instead (resource_ledger.cpp).

#include <optional>
#include <string>

namespace xdpvhost::sys {

// The file's text, at most 1 MiB of it; nothing if it cannot be opened or read.
std::optional<std::string> read_small_file(const char* path);

}  // namespace xdpvhost::sys

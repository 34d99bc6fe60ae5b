#pragma once
// The files of proto/ (JSON Schema documents, method descriptions, examples,
// the error table) as they were at build time, compiled into the binary by
// daemon/schemas/embed_proto.cmake.

#include <span>
#include <string_view>

namespace xdpvhost::daemon {

struct ProtoFile {
  std::string_view path;     // relative to proto/, e.g. "methods/port.add.json"
  std::string_view content;  // the file's bytes
};

// Every *.json file under proto/, sorted by path.
std::span<const ProtoFile> proto_files();

}  // namespace xdpvhost::daemon

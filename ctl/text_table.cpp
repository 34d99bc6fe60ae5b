#include "text_table.hpp"

#include <algorithm>
#include <cstdio>

namespace xdpvhost::ctl {

void TextTable::print(std::ostream& out) const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::size_t pad = width[c] - cell.size();
      const bool right = right_[c];
      if (c) text += "  ";
      if (right) text.append(pad, ' ');
      text += cell;
      if (!right && c + 1 < width.size()) text.append(pad, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  line(header_);
  for (const auto& row : rows_) line(row);
}

std::string format_bytes(unsigned long long n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", n);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_rate(double per_second) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", per_second);
  return buf;
}

}  // namespace xdpvhost::ctl

#pragma once
// A plain text table: a header row and rows of cells, columns padded to the
// widest cell, numbers right-aligned. What xdpvhostctl prints by default.

#include <ostream>
#include <string>
#include <vector>

namespace xdpvhost::ctl {

class TextTable {
 public:
  // `right`: per column, whether its cells are right-aligned (numbers).
  explicit TextTable(std::vector<std::string> header, std::vector<bool> right = {})
      : header_(std::move(header)), right_(std::move(right)) {
    right_.resize(header_.size(), false);
  }

  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const noexcept { return rows_.empty(); }
  // Columns separated by two spaces, no trailing blanks.
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// 1536 -> "1.5 KiB"; below 1024 "N B".
std::string format_bytes(unsigned long long n);
// One decimal: 12.5.
std::string format_rate(double per_second);

}  // namespace xdpvhost::ctl

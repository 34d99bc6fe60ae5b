#include "dataplane/source_guard.hpp"

#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {

bool SourceGuard::admit_new(const net::MacAddress& src, const SwitchTable* table,
                            const Port* self) noexcept {
  if (src.is_multicast() || src.is_zero()) return false;
  if (policy_ == MacPolicy::kFixed || (policy_ == MacPolicy::kLearn && mac_)) return false;
  if (pending_) return src == candidate_ && !handover_;
  if (refused_ && src == *refused_) return false;
  bool handover = false;
  if (table != nullptr)
    if (const SwitchEntry* owner = table->find_guest(src);
        owner != nullptr && (self == nullptr || owner->port->group() != self->group())) {
      if (policy_ != MacPolicy::kLearnMove) return false;
      handover = true;
    }
  if (learner_ == nullptr || !learner_->request(src)) return false;
  pending_ = true;
  handover_ = handover;
  candidate_ = src;
  // A hand-over is decided first: until then the MAC is another port's.
  return !handover;
}

void SourceGuard::learned(const net::MacAddress& mac) noexcept {
  mac_ = mac;
  pending_ = false;
  handover_ = false;
  if (refused_ == mac) refused_.reset();
}

void SourceGuard::released() noexcept {
  mac_.reset();
  pending_ = false;
  handover_ = false;
}

void SourceGuard::refused(const net::MacAddress& mac) noexcept {
  refused_ = mac;
  if (pending_ && candidate_ == mac) pending_ = handover_ = false;
}

}  // namespace xdpvhost::dataplane

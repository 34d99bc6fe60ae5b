#include "dataplane/source_guard.hpp"

#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {

Admission SourceGuard::admit_new(const net::MacAddress& src, const SwitchTable* table,
                                 const Port* self) noexcept {
  if (src.is_multicast() || src.is_zero()) return Admission::kRefuse;
  if (policy_ == MacPolicy::kFixed || (policy_ == MacPolicy::kLearn && mac_))
    return Admission::kRefuse;
  if (pending_) return src == candidate_ ? Admission::kHold : Admission::kRefuse;
  if (refused_ && src == *refused_) return Admission::kRefuse;
  if (table != nullptr && policy_ != MacPolicy::kLearnMove)
    if (const SwitchEntry* owner = table->find_guest(src);
        owner != nullptr && (self == nullptr || owner->port->group() != self->group())) {
      if (owned_ == src) return Admission::kRefuse;  // counted already
      owned_ = src;
      return Admission::kRefuseOwned;
    }
  if (learner_ == nullptr) return Admission::kRefuse;
  if (!requests_.allow()) return Admission::kRefuseRateLimited;
  if (!learner_->request(src)) return Admission::kRefuse;
  pending_ = true;
  candidate_ = src;
  return Admission::kHold;
}

void SourceGuard::learned(const net::MacAddress& mac) noexcept {
  mac_ = mac;
  pending_ = false;
  if (refused_ == mac) refused_.reset();
}

void SourceGuard::released() noexcept {
  mac_.reset();
  pending_ = false;
}

void SourceGuard::refused(const net::MacAddress& mac) noexcept {
  refused_ = mac;
  if (pending_ && candidate_ == mac) pending_ = false;
}

}  // namespace xdpvhost::dataplane

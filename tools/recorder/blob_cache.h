// Bytes of interned blobs the recorder itself may need to read later
// (point names, metadata keys and values, schema, config, identity,
// provenance lines). The agent may reuse an interned id long after pushing
// it, so blobs are kept beyond their InternedData frame, up to a byte cap;
// past it the oldest go first.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tcgd::recorder {

class BlobCache {
 public:
  explicit BlobCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  void put(uint64_t id, std::string_view bytes) {
    if (bytes.size() > max_bytes_) return;
    auto [it, inserted] = blobs_.try_emplace(id, bytes);
    if (!inserted) {  // the same id again: a new lap of the payload ring
      bytes_ -= it->second.size();
      it->second.assign(bytes);
    } else {
      order_.push_back(id);
    }
    bytes_ += bytes.size();
    while (bytes_ > max_bytes_ && !order_.empty()) {
      auto old = blobs_.find(order_.front());
      order_.pop_front();
      if (old == blobs_.end()) continue;
      bytes_ -= old->second.size();
      blobs_.erase(old);
    }
  }

  // nullptr when never seen or evicted.
  const std::string* find(uint64_t id) const {
    auto it = blobs_.find(id);
    return it == blobs_.end() ? nullptr : &it->second;
  }

 private:
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::unordered_map<uint64_t, std::string> blobs_;
  std::deque<uint64_t> order_;
};

}  // namespace tcgd::recorder

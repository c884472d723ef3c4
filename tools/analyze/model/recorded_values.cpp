#include "model/recorded_values.h"

#include <map>
#include <tuple>

#include "model/tensor_frames.h"

namespace tcgd::analyze {

std::vector<RecordedRange> readRecorded(const Bundle& bundle, const std::function<bool(uint64_t site)>& select) {
  using Key = std::tuple<uint64_t, uint32_t, uint32_t>;
  struct Pieces {
    RecordedRange head;
    std::map<uint64_t, std::string> by_offset;
  };
  std::map<Key, Pieces> found;
  TensorFrameVisitor visit;
  visit.payloads = [&](const bundle::TensorPayloadBatch& batch, const FrameInfo&) {
    for (const bundle::TensorPayload& p : batch.payloads()) {
      if (select && !select(p.site())) continue;
      Pieces& pieces = found[Key{p.site(), p.exec(), p.range()}];
      RecordedRange& r = pieces.head;
      r.site = p.site();
      r.exec = p.exec();
      r.range = p.range();
      r.dtype = p.dtype();
      r.range_bytes = p.range_bytes();
      r.limit = p.limit();
      pieces.by_offset[p.offset()] = p.data();
    }
  };
  if (bundle.tensorFrames() != 0) forEachTensorFrame(bundle, visit);
  std::vector<RecordedRange> out;
  for (auto& [key, pieces] : found) {
    RecordedRange r = std::move(pieces.head);
    for (auto& [offset, data] : pieces.by_offset) {
      if (offset != r.bytes.size()) break;  // a gap: what follows it is not the range's next bytes
      r.bytes += data;
    }
    r.missing = r.limit > r.bytes.size() ? r.limit - r.bytes.size() : 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tcgd::analyze

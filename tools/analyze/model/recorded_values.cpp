#include "model/recorded_values.h"

#include "model/tensor_frames.h"

namespace tcgd::analyze {

void RecordedJoiner::add(const bundle::TensorPayloadBatch& batch, const std::function<bool(uint64_t site)>& select) {
  for (const bundle::TensorPayload& p : batch.payloads()) {
    if (select && !select(p.site())) continue;
    Pieces& pieces = found_[{p.site(), p.exec(), p.range()}];
    RecordedRange& r = pieces.head;
    r.site = p.site();
    r.exec = p.exec();
    r.range = p.range();
    r.dtype = p.dtype();
    r.range_bytes = p.range_bytes();
    r.limit = p.limit();
    pieces.by_offset[p.offset()] = p.data();
  }
}

std::vector<RecordedRange> RecordedJoiner::finish() {
  std::vector<RecordedRange> out;
  out.reserve(found_.size());
  for (auto& [key, pieces] : found_) {
    RecordedRange r = std::move(pieces.head);
    for (auto& [offset, data] : pieces.by_offset) {
      if (offset != r.bytes.size()) break;  // a gap: what follows it is not the range's next bytes
      r.bytes += data;
    }
    r.missing = r.limit > r.bytes.size() ? r.limit - r.bytes.size() : 0;
    out.push_back(std::move(r));
  }
  found_.clear();
  return out;
}

std::vector<RecordedRange> readRecorded(const Bundle& bundle, const std::function<bool(uint64_t site)>& select) {
  RecordedJoiner joiner;
  TensorFrameVisitor visit;
  visit.payloads = [&](const bundle::TensorPayloadBatch& batch, const FrameInfo&) { joiner.add(batch, select); };
  if (bundle.tensorFrames() != 0) forEachTensorFrame(bundle, visit);
  return joiner.finish();
}

}  // namespace tcgd::analyze

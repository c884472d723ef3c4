// tcgd_check (the seed's CheckAction, docs/tensor.md "Explicit probes"): an
// explicit probe carries the values its tensor must hold; the agent records
// the tensor whole, and the recorder compares each execution's bytes (eager,
// or every replay) with them element by element as they arrive, with the
// analyzer's element comparison (tensor/values/element_compare.h:
// torch.testing's tolerances per dtype unless the call gave its own).
//
// The first failure is latched: one line on the job's standard error
//
//   tcgd check: FAILED at probe after_relu #0 graph 0 replay 1: 2 of 8 elements differ (25%), first at [3]: 1, expected 2; max abs error 1 at [3] (rtol 1.3e-06, atol 1e-05)
//
// and a TensorCheck frame (status failed, metric "values"); with the call's
// abort flag the job is stopped as by the check rule (exit status 86). The
// end prints how many executions were checked. Pieces of a site not yet
// described wait for it (bounded); executions whose bytes did not all
// arrive are counted as not checked, never guessed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class ExpectedCheck {
 public:
  using Sink = std::function<void(std::string_view line)>;
  // Bytes of pieces kept for sites not yet described.
  static constexpr uint64_t kMaxWaitingBytes = uint64_t{256} << 20;

  explicit ExpectedCheck(Sink sink) : sink_(std::move(sink)) {}

  // A kTensorExpected blob (kept until its site comes).
  void expectedBlob(uint64_t id, std::string_view bytes) { blobs_[id].assign(bytes); }
  // An explicit probe's pseudo kernel: its name.
  void probeName(uint64_t function, std::string_view name) { names_[function].assign(name); }
  // A described site with a check (pieces that waited for it are compared
  // now); returns the frame of a failure latched now.
  std::optional<bundle::Frame> site(const bundle::TensorSite& site);
  // A described site without a check: its waiting pieces are dropped.
  void notChecked(uint64_t site);
  // New recorded pieces (batch.payloads from `from` on).
  std::optional<bundle::Frame> payloads(const bundle::TensorPayloadBatch& batch, int from);
  // At the end: the summary line, and the final frame when a check ran.
  std::optional<bundle::Frame> finish();

  bool stopWanted() const { return failed_ && failure_abort_; }
  uint64_t checked() const { return checked_; }
  uint64_t notComplete() const;

 private:
  struct Expectation {
    std::string name;
    uint64_t invocation = 0;
    uint32_t capture = 0;
    uint32_t dtype = 0;
    std::vector<int64_t> shape, strides;
    std::string expected;  // empty when its blobs were lost
    bundle::ProbeCheck check;
    uint64_t site = 0;
  };
  // The pieces of one execution, by offset.
  using Pieces = std::map<uint64_t, std::string>;

  std::optional<bundle::Frame> take(const bundle::TensorPayload& piece);
  std::optional<bundle::Frame> compare(const Expectation& e, uint32_t exec, const std::string& bytes);
  bundle::Frame frame(bool final) const;

  Sink sink_;
  std::unordered_map<uint64_t, std::string> blobs_;
  std::unordered_map<uint64_t, std::string> names_;
  std::unordered_map<uint64_t, Expectation> sites_;
  std::map<std::pair<uint64_t, uint32_t>, Pieces> open_;  // (site, exec) of checked sites
  std::map<uint64_t, std::vector<bundle::TensorPayload>> waiting_;  // pieces of undescribed sites
  // Sites described without a check, one bit per site id (ids are dense,
  // from 1): a captured site's pieces come at every replay, long after it
  // was described, and are passed over by one lookup.
  std::vector<bool> not_checked_;
  bool notCheckedSite(uint64_t site) const { return site < not_checked_.size() && not_checked_[site]; }
  uint64_t waiting_bytes_ = 0;
  uint64_t waiting_lost_ = 0;
  uint64_t checked_ = 0;
  uint64_t failures_ = 0;
  uint64_t lost_expected_ = 0;
  bool failed_ = false;
  bool failure_abort_ = false;
  std::string failure_line_;
  bundle::Frame failure_frame_;
};

}  // namespace tcgd::recorder

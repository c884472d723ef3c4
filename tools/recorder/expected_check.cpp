#include "expected_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "tensor/values/element_compare.h"
#include "tensor/values/element_format.h"

namespace tcgd::recorder {
namespace {

using analyze::ElementComparison;
using analyze::ElementView;

constexpr uint32_t kStatusPassed = 1, kStatusFailed = 2;

std::string where(uint32_t capture, uint32_t exec) {
  return capture == 0 ? std::string("eager") : fmt::format("graph {} replay {}", capture - 1, exec);
}

}  // namespace

std::optional<bundle::Frame> ExpectedCheck::site(const bundle::TensorSite& s) {
  Expectation e;
  e.site = s.site();
  const auto name = names_.find(s.function());
  e.name = name != names_.end() ? name->second : fmt::format("probe {:#x}", s.function());
  e.invocation = s.invocation();
  e.capture = s.capture();
  e.check = s.check();
  if (s.ranges_size() != 0) {
    e.dtype = s.ranges(0).dtype();
    e.shape.assign(s.ranges(0).shape().begin(), s.ranges(0).shape().end());
    e.strides.assign(s.ranges(0).strides().begin(), s.ranges(0).strides().end());
  }
  for (uint64_t id : e.check.expected_blobs()) {
    const auto blob = blobs_.find(id);
    if (blob == blobs_.end()) {
      e.expected.clear();
      break;
    }
    e.expected += blob->second;
  }
  for (uint64_t id : e.check.expected_blobs()) blobs_.erase(id);
  if (e.expected.size() != e.check.expected_bytes()) {
    e.expected.clear();
    ++lost_expected_;
  }
  const uint64_t id = s.site();
  sites_[id] = std::move(e);
  std::optional<bundle::Frame> failed;
  if (auto w = waiting_.find(id); w != waiting_.end()) {
    for (const bundle::TensorPayload& p : w->second) {
      waiting_bytes_ -= p.data().size();
      if (auto f = take(p); f && !failed) failed = std::move(f);
    }
    waiting_.erase(w);
  }
  return failed;
}

void ExpectedCheck::notChecked(uint64_t site) {
  if (auto w = waiting_.find(site); w != waiting_.end()) {
    for (const bundle::TensorPayload& p : w->second) waiting_bytes_ -= p.data().size();
    waiting_.erase(w);
  }
  // Ids beyond 2^32 (never in practice) are not remembered: their pieces
  // wait and are dropped at the bound like any other.
  if (site >= (uint64_t{1} << 32)) return;
  if (site >= not_checked_.size()) not_checked_.resize(std::max<uint64_t>(site + 1, 2 * not_checked_.size()));
  not_checked_[site] = true;
}

std::optional<bundle::Frame> ExpectedCheck::payloads(const bundle::TensorPayloadBatch& batch, int from) {
  std::optional<bundle::Frame> failed;
  for (int i = from; i < batch.payloads_size(); ++i) {
    const bundle::TensorPayload& p = batch.payloads(i);
    if (p.range() != 0 || notCheckedSite(p.site())) continue;
    if (sites_.count(p.site()) == 0) {
      // Its site is not described yet: the GPU's pieces and the job's
      // records (its site, a check's expected values) take different paths,
      // in no set order, so a check's first execution can come before the
      // check itself. It waits, within a bound; a site described without a
      // check drops its pieces (notChecked).
      if (waiting_bytes_ + p.data().size() > kMaxWaitingBytes) {
        ++waiting_lost_;
        continue;
      }
      waiting_bytes_ += p.data().size();
      waiting_[p.site()].push_back(p);
      continue;
    }
    if (auto f = take(p); f && !failed) failed = std::move(f);
  }
  return failed;
}

std::optional<bundle::Frame> ExpectedCheck::take(const bundle::TensorPayload& piece) {
  const Expectation& e = sites_.at(piece.site());
  Pieces& pieces = open_[{piece.site(), piece.exec()}];
  pieces[piece.offset()] = piece.data();
  // Whole when the pieces join up to the expected bytes from offset 0.
  uint64_t joined = 0;
  for (const auto& [offset, data] : pieces) {
    if (offset != joined) return std::nullopt;
    joined += data.size();
  }
  if (joined < e.check.expected_bytes()) return std::nullopt;
  std::string bytes;
  bytes.reserve(joined);
  for (const auto& [offset, data] : pieces) bytes += data;
  open_.erase({piece.site(), piece.exec()});
  if (e.expected.empty()) return std::nullopt;  // its expected values were lost: counted at the site
  return compare(e, piece.exec(), bytes);
}

std::optional<bundle::Frame> ExpectedCheck::compare(const Expectation& e, uint32_t exec, const std::string& bytes) {
  ElementView got, want;
  got.data = bytes.data();
  got.bytes = e.check.expected_bytes();
  want.data = e.expected.data();
  want.bytes = e.expected.size();
  got.dtype = want.dtype = e.dtype < static_cast<uint32_t>(tensor::Dtype::kCount) ? static_cast<tensor::Dtype>(e.dtype)
                                                                                    : tensor::Dtype::kUnknown;
  if (got.dtype != tensor::Dtype::kUnknown) got.shape = want.shape = e.shape.empty() ? std::vector<int64_t>{1} : e.shape;
  analyze::ElementCompareOptions options;
  if (e.check.rtol() >= 0) options.rtol = e.check.rtol();
  if (e.check.atol() >= 0) options.atol = e.check.atol();
  options.equal_nan = e.check.equal_nan();
  ElementComparison c;
  try {
    c = analyze::compareElements(want, got, options);
  } catch (const std::exception&) {
    return std::nullopt;  // a shape that does not fit its bytes: the agent checked it; never here
  }
  ++checked_;
  if (c.ok()) return std::nullopt;
  ++failures_;
  if (failed_) return std::nullopt;
  failed_ = true;
  failure_abort_ = e.check.abort();
  std::string line = fmt::format("tcgd check: FAILED at probe {} #{} {}: ", e.name, e.invocation, where(e.capture, exec));
  if (c.status == analyze::ElementStatus::kMetadataMismatch) {
    line += c.metadata_reason;
  } else {
    line += fmt::format("{} of {} elements differ ({:.3g}%)", c.mismatches, c.compared, 100 * c.mismatch_fraction);
    if (c.first_mismatch.present)
      line += fmt::format(", first at {}: {}, expected {}", analyze::elementIndexText(c.first_mismatch.index),
                          analyze::elementValueText(c.first_mismatch.candidate),
                          analyze::elementValueText(c.first_mismatch.reference));
    if (c.numeric && c.max_abs_error > 0)
      line += fmt::format("; max abs error {:.6g} at {}", c.max_abs_error, analyze::elementIndexText(c.max_abs_at.index));
    if (c.method == "values") line += fmt::format(" (rtol {:.3g}, atol {:.3g})", c.tolerance.rtol, c.tolerance.atol);
  }
  if (failure_abort_) line += "; stopping the job (exit status 86)";
  failure_line_ = line;
  sink_(line);
  bundle::Frame f;
  bundle::TensorCheck* t = f.mutable_tensor_check();
  t->set_final(false);
  t->set_status(kStatusFailed);
  t->set_detail(line);
  t->set_reference("expected values (tcgd_check)");
  t->set_abort(failure_abort_);
  t->set_stopped_job(failure_abort_);
  t->set_rtol(c.tolerance.rtol);
  t->set_atol(c.tolerance.atol);
  t->set_tolerance_given(e.check.rtol() >= 0 || e.check.atol() >= 0);
  t->set_capture(e.capture);
  t->set_replay(e.capture != 0 ? exec : 0);
  t->set_site(e.site);
  t->set_kernel(e.name);
  t->set_invocation(e.invocation);
  t->set_param(0);
  t->set_metric("values");
  t->set_verdict("different");
  if (c.first_mismatch.present) {
    t->set_reference_value(analyze::elementAsDouble(c.first_mismatch.reference));
    t->set_candidate_value(analyze::elementAsDouble(c.first_mismatch.candidate));
  }
  failure_frame_ = f;
  return f;
}

uint64_t ExpectedCheck::notComplete() const { return open_.size(); }

std::optional<bundle::Frame> ExpectedCheck::finish() {
  if (sites_.empty()) return std::nullopt;
  const uint64_t incomplete = open_.size() + waiting_.size() + waiting_lost_;
  std::string tail;
  if (incomplete != 0) tail += fmt::format("; {} not checked (their bytes did not all arrive)", incomplete);
  if (lost_expected_ != 0) tail += fmt::format("; {} probes' expected values lost (channel full)", lost_expected_);
  bundle::Frame f;
  if (failed_) {
    f = failure_frame_;
    if (failures_ > 1) sink_(fmt::format("tcgd check: {} of {} checked executions of explicit probes failed{}", failures_,
                                         checked_, tail));
  } else {
    const std::string line =
        fmt::format("tcgd check: passed: {} executions of {} explicit probes matched their expected values{}",
                    checked_, sites_.size(), tail);
    sink_(line);
    bundle::TensorCheck* t = f.mutable_tensor_check();
    t->set_status(kStatusPassed);
    t->set_detail(line);
    t->set_reference("expected values (tcgd_check)");
  }
  f.mutable_tensor_check()->set_final(true);
  return f;
}

}  // namespace tcgd::recorder

// TensorRunParts by hand, for the unit tests of the tensor model and its
// analyses: kernels, sites with ranges, observations with chosen hashes,
// captures and replays.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_run.h"

namespace tcgd::analyze::testing {

class RunBuilder {
 public:
  struct Range {
    uint64_t ptr;
    uint64_t bytes = 64;
    uint64_t base = 0;  // 0: ptr
  };

  uint32_t kernel(const std::string& name, uint32_t params = 0) {
    RunKernel k;
    k.function = 0x100 + parts.kernels.size();
    k.name = name;
    k.dtype = 1;
    for (uint32_t p = 0; p < params; ++p) {
      k.param_offsets.push_back(p * 8);
      k.param_sizes.push_back(8);
    }
    parts.kernels.push_back(k);
    return static_cast<uint32_t>(parts.kernels.size() - 1);
  }

  // A site of `kernel` with `ranges` (parameter i, pointer word at 8 i); a
  // copy or set when `kind` says so (its one range is the destination).
  uint32_t site(uint32_t kernel, const std::vector<Range>& ranges, uint32_t capture = 0,
                LaunchKind kind = LaunchKind::kKernel, const std::string& params = "") {
    RunSite s;
    s.id = parts.sites.size() + 1;
    s.sequence = sequence++;
    s.kind = kind;
    s.function = parts.kernels[kernel].function;
    s.capture = capture;
    s.node = capture == 0 ? 0 : nodes[capture]++;
    s.first_range = static_cast<uint32_t>(parts.ranges.size());
    s.range_count = static_cast<uint32_t>(ranges.size());
    s.first_pointer = static_cast<uint32_t>(parts.pointers.size());
    for (uint32_t i = 0; i < ranges.size(); ++i) {
      SiteRange r;
      r.index = static_cast<uint16_t>(i);
      const bool destination = kind == LaunchKind::kCopy || kind == LaunchKind::kSet;
      r.param = static_cast<int16_t>(destination ? -1 : static_cast<int32_t>(i));
      r.offset = static_cast<uint16_t>(destination ? 0 : i * 8);
      r.ptr = ranges[i].ptr;
      r.bytes = r.extent = ranges[i].bytes;
      r.base = ranges[i].base == 0 ? ranges[i].ptr : ranges[i].base;
      r.dtype = 1;
      parts.ranges.push_back(r);
      if (!destination) parts.pointers.push_back(PointerWord{i * 8, i});
    }
    s.pointer_count = static_cast<uint32_t>(parts.pointers.size()) - s.first_pointer;
    if (!params.empty()) {
      s.params_blob = parts.sites.size() + 1000;
      s.params_bytes = static_cast<uint32_t>(params.size());
      parts.params[s.params_blob] = params;
    }
    parts.sites.push_back(s);
    return static_cast<uint32_t>(parts.sites.size() - 1);
  }

  void observe(uint32_t site, uint32_t exec, uint32_t range, uint64_t hash, uint64_t elements = 16) {
    Fingerprint f;
    f.site = site;
    f.exec = exec;
    f.range = static_cast<uint16_t>(range);
    f.hash = hash;
    f.elements = elements;
    f.dtype = 1;
    f.minimum = f.maximum = static_cast<double>(hash % 97);
    f.sum = f.sum_squares = static_cast<double>(hash % 1013);
    parts.observations.push_back(f);
  }

  // Range `range` of `site` is not fingerprinted: in each replay its
  // observation is that of range `source_range` of `source` (RangeReuse).
  // The site's replay window opens to every replay (RunBuilder's sites have
  // 0-0 unless told), as the agent's are without a replays= rule.
  void reuse(uint32_t site, uint32_t range, uint32_t source, uint32_t source_range) {
    RangeReuse r;
    r.site_id = parts.sites[site].id;
    r.range = static_cast<uint16_t>(range);
    r.source_site_id = parts.sites[source].id;
    r.source_range = source_range;
    parts.reuses.push_back(r);
    parts.sites[site].replay_last = UINT32_MAX;
  }

  // Capture ordinal `ordinal` (sites pass ordinal + 1), then `replays` launches.
  void beginCapture(uint64_t ordinal) { record(GraphRecord::Kind::kProbeBegin, ordinal); }
  void endCapture(uint64_t ordinal) {
    record(GraphRecord::Kind::kProbeEnd, ordinal, 0x900 + ordinal);
    GraphRecord g;
    g.kind = GraphRecord::Kind::kInstantiate;
    g.sequence = sequence++;
    g.graph = 0x900 + ordinal;
    g.exec = 0xa00 + ordinal;
    parts.graph_records.push_back(g);
  }
  void replay(uint64_t ordinal) {
    GraphRecord g;
    g.kind = GraphRecord::Kind::kLaunch;
    g.sequence = sequence++;
    g.exec = 0xa00 + ordinal;
    parts.graph_records.push_back(g);
  }
  void point(const std::string& name) {
    parts.points.push_back(RunPoint{sequence++, parts.points.size(), 0, name, "explicit"});
  }

  TensorRun build() { return TensorRun::assemble(parts); }

  TensorRunParts parts;
  uint64_t sequence = 1;

 private:
  void record(GraphRecord::Kind kind, uint64_t ordinal, uint64_t graph = 0) {
    GraphRecord g;
    g.kind = kind;
    g.sequence = sequence++;
    g.ordinal = ordinal;
    g.graph = graph;
    parts.graph_records.push_back(g);
  }
  std::vector<uint32_t> nodes = std::vector<uint32_t>(64, 0);
};

}  // namespace tcgd::analyze::testing

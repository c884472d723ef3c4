// TensorRun's derived data: captures and their replays from the graph
// records, the observation index, the launch list.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

void TensorRun::buildCaptures(const std::vector<GraphRecord>& records) {
  // Ordinals count the process's successful stream captures in the order of
  // their begin records (the agent numbers sites' `capture` that way).
  // The probes' own capture records carry that ordinal and the graph; the
  // driver's begin and end records are the fallback (a bundle without them
  // numbers the same captures the same way unless records were dropped).
  const bool probe_records = std::any_of(records.begin(), records.end(), [](const GraphRecord& r) {
    return r.kind == GraphRecord::Kind::kProbeBegin;
  });
  std::unordered_map<uint64_t, uint32_t> open_by_stream;
  std::unordered_map<uint64_t, uint32_t> capture_of_graph;  // the latest capture that made the graph
  std::unordered_map<uint64_t, uint32_t> capture_of_exec;   // the latest instantiation of the exec
  const auto capture_at = [&](uint64_t ordinal) -> GraphCapture& {
    while (captures_.size() <= ordinal) {
      GraphCapture c;
      c.ordinal = static_cast<uint32_t>(captures_.size());
      captures_.push_back(std::move(c));
    }
    return captures_[ordinal];
  };
  for (const GraphRecord& r : records) {
    if (r.kind == GraphRecord::Kind::kProbeBegin) {
      GraphCapture& c = capture_at(r.ordinal);
      c.begin_sequence = r.sequence;
      c.stream = r.stream;
      c.capture_id = r.capture_id;
      continue;
    }
    if (r.kind == GraphRecord::Kind::kProbeEnd) {
      GraphCapture& c = capture_at(r.ordinal);
      c.end_sequence = r.sequence;
      c.ended = r.graph != 0;
      c.graph = r.graph;
      c.launches = r.launches;
      if (r.graph != 0) capture_of_graph[r.graph] = c.ordinal;
      continue;
    }
    if (r.result != 0) continue;
    if (probe_records &&
        (r.kind == GraphRecord::Kind::kBeginCapture || r.kind == GraphRecord::Kind::kEndCapture))
      continue;
    switch (r.kind) {
      case GraphRecord::Kind::kProbeBegin:
      case GraphRecord::Kind::kProbeEnd:
        break;
      case GraphRecord::Kind::kBeginCapture: {
        GraphCapture c;
        c.ordinal = static_cast<uint32_t>(captures_.size());
        c.begin_sequence = r.sequence;
        c.stream = r.stream;
        c.graph = r.graph;
        open_by_stream[r.stream] = c.ordinal;
        captures_.push_back(std::move(c));
        break;
      }
      case GraphRecord::Kind::kEndCapture: {
        const auto it = open_by_stream.find(r.stream);
        if (it == open_by_stream.end()) break;
        GraphCapture& c = captures_[it->second];
        c.end_sequence = r.sequence;
        c.ended = true;
        c.graph = r.graph;
        capture_of_graph[r.graph] = c.ordinal;
        open_by_stream.erase(it);
        break;
      }
      case GraphRecord::Kind::kInstantiate: {
        const auto it = capture_of_graph.find(r.graph);
        if (it == capture_of_graph.end()) {
          capture_of_exec.erase(r.exec);  // a graph built otherwise: its launches are not ours
          break;
        }
        captures_[it->second].execs.push_back(r.exec);
        capture_of_exec[r.exec] = it->second;
        break;
      }
      case GraphRecord::Kind::kLaunch: {
        const auto it = capture_of_exec.find(r.exec);
        if (it == capture_of_exec.end()) break;
        GraphCapture& c = captures_[it->second];
        GraphReplay replay;
        replay.sequence = r.sequence;
        replay.time_ns = r.time_ns;
        replay.exec = r.exec;
        replay.stream = r.stream;
        replay.capture = c.ordinal;
        replay.index = static_cast<uint32_t>(c.replays.size());
        c.replays.push_back(static_cast<uint32_t>(replays_.size()));
        replays_.push_back(replay);
        break;
      }
    }
  }

  // Sites of each capture, in node order; captures the records never began
  // (records dropped) are made up so their sites still have a home.
  uint32_t made_up = 0;
  for (uint32_t s = 0; s < sites_.size(); ++s) {
    const uint32_t capture = sites_[s].capture;
    if (capture == 0) continue;
    while (captures_.size() < capture) {
      GraphCapture c;
      c.ordinal = static_cast<uint32_t>(captures_.size());
      c.begin_sequence = sites_[s].sequence;
      captures_.push_back(std::move(c));
      ++made_up;
    }
    captures_[capture - 1].sites.push_back(s);
  }
  if (made_up > 0) {
    warnings_.push_back(fmt::format("{} capture(s) have sites but no begin-capture record (records dropped?)",
                                    made_up));
  }
  for (GraphCapture& c : captures_) {
    std::stable_sort(c.sites.begin(), c.sites.end(),
                     [&](uint32_t a, uint32_t b) { return sites_[a].node < sites_[b].node; });
  }

  // Replays that observations prove but no launch record names: placed after
  // the capture's last known replay (or its end), in replay order.
  std::vector<uint32_t> max_exec(captures_.size(), 0);
  std::vector<bool> observed(captures_.size(), false);
  for (const RunSite& site : sites_) {
    if (site.capture == 0 || site.exec_count == 0) continue;
    max_exec[site.capture - 1] = std::max(max_exec[site.capture - 1], site.exec_first + site.exec_count - 1);
    observed[site.capture - 1] = true;
  }
  bool synthesized = false;
  for (GraphCapture& c : captures_) {
    if (!observed[c.ordinal] || max_exec[c.ordinal] < c.replays.size()) continue;
    const uint32_t missing = max_exec[c.ordinal] + 1 - static_cast<uint32_t>(c.replays.size());
    uint64_t sequence = c.replays.empty() ? std::max(c.end_sequence, c.begin_sequence)
                                          : replays_[c.replays.back()].sequence;
    for (const uint32_t s : c.sites) sequence = std::max(sequence, sites_[s].sequence);
    for (uint32_t k = 0; k < missing; ++k) {
      GraphReplay replay;
      replay.sequence = sequence;
      replay.capture = c.ordinal;
      replay.index = static_cast<uint32_t>(c.replays.size());
      replay.synthetic = true;
      c.replays.push_back(static_cast<uint32_t>(replays_.size()));
      replays_.push_back(replay);
    }
    synthesized = true;
    warnings_.push_back(fmt::format(
        "capture {}: {} replay(s) are observed but have no graph-launch record; they are placed after "
        "the last one known",
        c.ordinal + 1, missing));
  }
  if (synthesized) {
    // Keep replays_ in issue order; captures refer to them by index.
    std::vector<uint32_t> order(replays_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return replays_[a].sequence < replays_[b].sequence;
    });
    std::vector<uint32_t> new_index(order.size());
    std::vector<GraphReplay> sorted;
    sorted.reserve(order.size());
    for (uint32_t i = 0; i < order.size(); ++i) {
      new_index[order[i]] = i;
      sorted.push_back(replays_[order[i]]);
    }
    replays_ = std::move(sorted);
    for (GraphCapture& c : captures_) {
      for (uint32_t& r : c.replays) r = new_index[r];
    }
  }
}

void TensorRun::indexObservations(const std::vector<std::pair<uint32_t, uint64_t>>& unresolved) {
  std::unordered_map<uint64_t, uint32_t> by_id;
  if (!unresolved.empty() || !reuses_.empty()) {
    by_id.reserve(sites_.size());
    for (uint32_t i = 0; i < sites_.size(); ++i) by_id.emplace(sites_[i].id, i);
  }
  // Rows the loader met before their site: resolved by id now.
  for (const auto& [row, id] : unresolved) {
    const auto it = by_id.find(id);
    if (row < observations_.size()) observations_[row].site = it == by_id.end() ? kNone32 : it->second;
  }
  // One pass over the rows: each site's execution window and range slots.
  std::vector<uint32_t> first(sites_.size(), kNone32), last(sites_.size(), 0), ranges(sites_.size(), 0);
  for (uint32_t s = 0; s < sites_.size(); ++s) {
    const RunSite& site = sites_[s];
    for (uint32_t i = 0; i < site.range_count; ++i)
      ranges[s] = std::max<uint32_t>(ranges[s], ranges_[site.first_range + i].index + 1u);
  }
  const auto widen = [&](const Fingerprint& o) {
    first[o.site] = std::min(first[o.site], o.exec);
    last[o.site] = std::max(last[o.site], o.exec);
    ranges[o.site] = std::max<uint32_t>(ranges[o.site], o.range + 1u);
  };
  size_t kept = 0;
  for (size_t i = 0; i < observations_.size(); ++i) {
    const uint32_t s = observations_[i].site < sites_.size() ? observations_[i].site : kNone32;
    if (s == kNone32) continue;
    Fingerprint& o = observations_[kept];
    if (kept != i) o = observations_[i];
    o.site = s;
    ++kept;
    widen(o);
  }
  if (kept < observations_.size()) {
    warnings_.push_back(fmt::format("{} observation(s) name a site the bundle does not describe; left out",
                                    observations_.size() - kept));
    observations_.resize(kept);
  }
  // The reused ranges' observations, appended and indexed as loaded ones.
  carried_first_ = observations_.size();
  resolveReuses(by_id);
  carryReused();
  for (size_t i = carried_first_; i < observations_.size(); ++i) widen(observations_[i]);
  uint64_t total = 0;
  for (uint32_t s = 0; s < sites_.size(); ++s) {
    RunSite& site = sites_[s];
    site.slots_per_exec = ranges[s];
    site.exec_first = first[s] == kNone32 ? 0 : first[s];
    site.exec_count = first[s] == kNone32 ? 0 : last[s] - first[s] + 1;
    site.slot_base = static_cast<uint32_t>(total);
    total += static_cast<uint64_t>(site.exec_count) * site.slots_per_exec;
  }
  if (total >= kNone32) throw std::length_error("too many observation slots in one bundle");
  slot_count_ = total;
}

void TensorRun::buildSlots() {
  slots_.assign(slot_count_, kNone32);
  const auto slot_of = [&](const Fingerprint& o) -> uint32_t& {
    const RunSite& site = sites_[o.site];
    return slots_[site.slot_base + (o.exec - site.exec_first) * site.slots_per_exec + o.range];
  };
  uint64_t duplicates = 0;
  for (uint32_t i = 0; i < carried_first_; ++i) {
    uint32_t& slot = slot_of(observations_[i]);
    if (slot != kNone32) {
      ++duplicates;
      continue;
    }
    slot = i;
  }
  if (duplicates > 0) {
    warnings_.push_back(fmt::format("{} observation(s) repeat a (site, replay, range) already seen; the first is used",
                                    duplicates));
  }
  // Carried rows go where the bundle has no observation; the rows kept close
  // up behind the loaded ones (nothing refers to them yet).
  size_t kept = carried_first_;
  uint64_t observed = 0;
  for (size_t i = carried_first_; i < observations_.size(); ++i) {
    uint32_t& slot = slot_of(observations_[i]);
    if (slot != kNone32) {
      // The bundle observed the range after all (or its source repeats an
      // observation, said above).
      if (slot < carried_first_) ++observed;
      continue;
    }
    if (kept != i) observations_[kept] = observations_[i];
    slot = static_cast<uint32_t>(kept++);
  }
  observations_.resize(kept);
  if (observed > 0) {
    warnings_.push_back(fmt::format("{} observation(s) of reused ranges are in the bundle; they are used instead of "
                                    "the ones their sources carry",
                                    observed));
  }
}

void TensorRun::buildLaunches() {
  launches_.clear();
  eager_launches_ = 0;
  size_t replayed = 0;
  for (const GraphCapture& c : captures_) replayed += c.replays.size() * c.sites.size();
  launches_.reserve(sites_.size() + replayed);
  // Eager sites are in sequence order already; a replay's launches all
  // carry the replay's sequence and follow each other in node order. Merge.
  size_t next_replay = 0;
  const auto emit_replay = [&](uint32_t r) {
    const GraphReplay& replay = replays_[r];
    for (const uint32_t s : captures_[replay.capture].sites)
      launches_.push_back(RunLaunch{replay.sequence, s, replay.index, r});
  };
  for (uint32_t s = 0; s < sites_.size(); ++s) {
    const RunSite& site = sites_[s];
    if (site.captured()) continue;
    while (next_replay < replays_.size() && replays_[next_replay].sequence < site.sequence)
      emit_replay(static_cast<uint32_t>(next_replay++));
    launches_.push_back(RunLaunch{site.sequence, s, 0, kNone32});
    ++eager_launches_;
  }
  while (next_replay < replays_.size()) emit_replay(static_cast<uint32_t>(next_replay++));
}

}  // namespace tcgd::analyze

namespace tcgd::analyze {

// Recorded observations name their site by id; after sortSites() the ids
// map to indices. A run holds few of them (a record rule picks launches),
// so they are found by binary search over (site, exec, range).
void TensorRun::indexRecorded() {
  if (recorded_.empty()) return;
  std::unordered_map<uint64_t, uint32_t> by_id;
  by_id.reserve(sites_.size());
  for (uint32_t i = 0; i < sites_.size(); ++i) by_id.emplace(sites_[i].id, i);
  size_t unknown = 0;
  std::vector<RecordedObservation> known;
  known.reserve(recorded_.size());
  for (RecordedObservation& r : recorded_) {
    const auto it = by_id.find(r.site_id);
    if (it == by_id.end()) {
      ++unknown;
      continue;
    }
    r.site = it->second;
    known.push_back(std::move(r));
  }
  if (unknown > 0)
    warnings_.push_back(fmt::format("{} recorded observation(s) name a site the bundle does not describe; left out", unknown));
  std::sort(known.begin(), known.end(), [](const RecordedObservation& a, const RecordedObservation& b) {
    return std::tie(a.site, a.exec, a.range) < std::tie(b.site, b.exec, b.range);
  });
  recorded_ = std::move(known);
  for (uint32_t l = 0; l < launches_.size(); ++l) {
    const RunLaunch& launch = launches_[l];
    const auto it = std::lower_bound(recorded_.begin(), recorded_.end(), std::pair{launch.site, launch.exec},
                                     [](const RecordedObservation& r, const std::pair<uint32_t, uint32_t>& key) {
                                       return std::tie(r.site, r.exec) < std::tie(key.first, key.second);
                                     });
    if (it != recorded_.end() && it->site == launch.site && it->exec == launch.exec) recorded_launches_.push_back(l);
  }
}

const RecordedObservation* TensorRun::findRecorded(uint32_t site, uint32_t exec, uint32_t range) const {
  const auto it = std::lower_bound(recorded_.begin(), recorded_.end(), std::tuple{site, exec, range},
                                   [](const RecordedObservation& r, const std::tuple<uint32_t, uint32_t, uint32_t>& key) {
                                     return std::tie(r.site, r.exec, r.range) < key;
                                   });
  return it != recorded_.end() && it->site == site && it->exec == exec && it->range == range ? &*it : nullptr;
}

}  // namespace tcgd::analyze

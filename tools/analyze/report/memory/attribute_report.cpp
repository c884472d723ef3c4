#include "report/memory/attribute_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <tuple>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

struct StackGroup {
  int64_t bytes = 0;
  uint64_t grown = 0, released = 0, blocks = 0;
};
using StackKey = std::tuple<int16_t, uint32_t, uint32_t>;  // device, pool, stack

class AttributeReport {
 public:
  AttributeReport(const std::string& bundle, const MemoryHistory& history, const Attribution& a,
                  const std::vector<std::string>& stack_texts, const AttributeReportOptions& options)
      : bundle_(bundle), history_(history), a_(a), stack_texts_(stack_texts), by_(options.by),
        limit_(options.limit) {}

  Report build();

 private:
  std::string pool(uint32_t index) const {
    return index == kNoPool ? std::string("unknown pool") : poolLabel(history_.pools()[index]);
  }
  std::string point(size_t index) const { return history_.intervals()[index].before->name(); }
  const std::string& stack(uint32_t index) const { return stack_texts_[index]; }
  void poolJson(uint32_t index, JsonWriter& json) const {
    if (index == kNoPool) {
      json.key("pool").null();
      return;
    }
    const auto& id = history_.pools()[index];
    json.key("pool").beginArray().value(id.first).value(id.second).endArray();
  }

  const std::string& bundle_;
  const MemoryHistory& history_;
  const Attribution& a_;
  const std::vector<std::string>& stack_texts_;
  const AttributeBy by_;
  const size_t limit_;
};

Report AttributeReport::build() {
  Report report;
  std::map<StackKey, StackGroup> stacks;
  for (const AttributedLifetime& e : a_.entries) {
    const Lifetime& l = a_.table.lifetimes()[e.lifetime];
    StackGroup& g = stacks[{l.device, l.pool, l.stack}];
    g.bytes += e.bytes;
    (e.bytes >= 0 ? g.grown : g.released) += static_cast<uint64_t>(e.bytes < 0 ? -e.bytes : e.bytes);
    ++g.blocks;
  }
  std::vector<std::pair<StackKey, StackGroup>> by_stack(stacks.begin(), stacks.end());
  std::stable_sort(by_stack.begin(), by_stack.end(), [](const auto& x, const auto& y) {
    return std::abs(x.second.bytes) > std::abs(y.second.bytes);
  });

  ReportTable pools{"pools",
                    {"device", "pool", "allocated_before", "allocated_after", "snapshot_growth",
                     "attributed", "difference", "grown", "grown_blocks", "released",
                     "released_blocks"},
                    {}};
  ReportTable stack_table{"stacks", {"device", "pool", "stack", "bytes", "grown", "released", "blocks"}, {}};
  ReportTable events{"events",
                     {"device", "pool", "address", "size", "bytes", "birth_seq", "free_requested_seq",
                      "stack"},
                     {}};
  const auto opt = [](const auto& v) { return v ? std::to_string(*v) : std::string(); };
  const auto seq = [&](uint32_t event) {
    return event == kNoEvent ? std::string() : std::to_string(history_.events()[event].sequence);
  };
  for (const PoolGrowth& g : a_.pools) {
    std::optional<int64_t> difference;
    if (g.snapshot_growth) difference = *g.snapshot_growth - g.attributed();
    pools.rows.push_back({std::to_string(g.device), pool(g.pool), opt(g.allocated_before),
                          opt(g.allocated_after), opt(g.snapshot_growth),
                          std::to_string(g.attributed()), opt(difference), std::to_string(g.grown),
                          std::to_string(g.grown_blocks), std::to_string(g.released),
                          std::to_string(g.released_blocks)});
  }
  for (const auto& [key, g] : by_stack) {
    const auto& [device, pool_index, stack_index] = key;
    stack_table.rows.push_back({std::to_string(device), pool(pool_index), stack(stack_index),
                                std::to_string(g.bytes), std::to_string(g.grown),
                                std::to_string(g.released), std::to_string(g.blocks)});
  }
  for (const AttributedLifetime& e : a_.entries) {
    const Lifetime& l = a_.table.lifetimes()[e.lifetime];
    events.rows.push_back({std::to_string(l.device), pool(l.pool), fmt::format("{:#x}", l.address),
                           std::to_string(l.bytes()), std::to_string(e.bytes), seq(l.birth),
                           seq(l.free_requested), stack(l.stack)});
  }

  // JSON: everything.
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value("tcgd.memory.attribute");
  json.key("version").value(1);
  json.key("bundle").value(bundle_);
  json.key("from").value(point(a_.first));
  json.key("to").value(point(a_.last));
  a_.seed_point.empty() ? json.key("seed_point").null() : json.key("seed_point").value(a_.seed_point);
  json.key("pools").beginArray();
  for (const PoolGrowth& g : a_.pools) {
    json.beginObject();
    json.key("device").value(g.device);
    poolJson(g.pool, json);
    g.allocated_before ? json.key("allocated_before").value(*g.allocated_before)
                       : json.key("allocated_before").null();
    g.allocated_after ? json.key("allocated_after").value(*g.allocated_after)
                      : json.key("allocated_after").null();
    g.snapshot_growth ? json.key("snapshot_growth").value(*g.snapshot_growth)
                      : json.key("snapshot_growth").null();
    json.key("attributed").value(g.attributed());
    g.snapshot_growth ? json.key("difference").value(*g.snapshot_growth - g.attributed())
                      : json.key("difference").null();
    json.key("grown").value(g.grown);
    json.key("grown_blocks").value(g.grown_blocks);
    json.key("released").value(g.released);
    json.key("released_blocks").value(g.released_blocks);
    json.endObject();
  }
  json.endArray();
  json.key("stacks").beginArray();
  for (const auto& [key, g] : by_stack) {
    const auto& [device, pool_index, stack_index] = key;
    json.beginObject();
    json.key("device").value(device);
    poolJson(pool_index, json);
    stack_index == kNoStack ? json.key("stack").null() : json.key("stack").value(stack(stack_index));
    json.key("bytes").value(g.bytes);
    json.key("grown").value(g.grown);
    json.key("released").value(g.released);
    json.key("blocks").value(g.blocks);
    json.endObject();
  }
  json.endArray();
  json.key("events").beginArray();
  for (const AttributedLifetime& e : a_.entries) {
    const Lifetime& l = a_.table.lifetimes()[e.lifetime];
    json.beginObject();
    json.key("device").value(l.device);
    poolJson(l.pool, json);
    json.key("address").value(l.address);
    json.key("size").value(l.bytes());
    json.key("requested").value(l.size);
    json.key("bytes").value(e.bytes);
    l.birth == kNoEvent ? json.key("birth_seq").null()
                        : json.key("birth_seq").value(history_.events()[l.birth].sequence);
    l.free_requested == kNoEvent
        ? json.key("free_requested_seq").null()
        : json.key("free_requested_seq").value(history_.events()[l.free_requested].sequence);
    l.stack == kNoStack ? json.key("stack").null() : json.key("stack").value(stack(l.stack));
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json.push_back('\n');

  // Text: the pools always, then the breakdown --by asks for.
  auto it = std::back_inserter(report.text);
  fmt::format_to(it, "growth attributed: {}\nfrom \"{}\" to \"{}\"; history {}\n\n", bundle_,
                 point(a_.first), point(a_.last),
                 a_.seed_point.empty() ? std::string("from the start of the recording")
                                       : "from the allocator snapshot at \"" + a_.seed_point + "\"");
  fmt::format_to(it, "  {:>3}  {:<24} {:>12} {:>12} {:>12}  {}\n", "dev", "pool", "snapshots",
                 "attributed", "difference", "made of");
  for (const PoolGrowth& g : a_.pools) {
    const std::string difference =
        !g.snapshot_growth ? std::string("n/a")
        : *g.snapshot_growth == g.attributed() ? std::string("0")
                                               : plusBytes(*g.snapshot_growth - g.attributed());
    fmt::format_to(it, "  {:>3}  {:<24} {:>12} {:>12} {:>12}  +{} in {} blocks, -{} in {}\n",
                   g.device, pool(g.pool), g.snapshot_growth ? plusBytes(*g.snapshot_growth) : "n/a",
                   plusBytes(g.attributed()), difference, humanBytes(g.grown), g.grown_blocks,
                   humanBytes(g.released), g.released_blocks);
  }
  if (a_.pools.empty()) fmt::format_to(it, "  no allocated bytes changed\n");
  for (const PoolGrowth& g : a_.pools) {
    if (g.snapshot_growth && *g.snapshot_growth != g.attributed())
      fmt::format_to(it,
                     "note: {} on device {}: the snapshots show {}, the history {} (difference {})\n",
                     pool(g.pool), g.device, plusBytes(*g.snapshot_growth),
                     plusBytes(g.attributed()), plusBytes(*g.snapshot_growth - g.attributed()));
  }
  if (by_ == AttributeBy::kStack) {
    fmt::format_to(it, "\nby stack ({} of {}):\n", std::min(limit_, by_stack.size()), by_stack.size());
    size_t n = 0;
    for (const auto& [key, g] : by_stack) {
      if (n++ == limit_) break;
      const auto& [device, pool_index, stack_index] = key;
      fmt::format_to(it, "  {:>12}  {:>6} blocks  dev {} {:<24}  {}\n", plusBytes(g.bytes),
                     g.blocks, device, pool(pool_index), stack(stack_index));
    }
  } else if (by_ == AttributeBy::kEvent) {
    fmt::format_to(it, "\nby event ({} of {}):\n", std::min(limit_, a_.entries.size()),
                   a_.entries.size());
    size_t n = 0;
    for (const AttributedLifetime& e : a_.entries) {
      if (n++ == limit_) break;
      const Lifetime& l = a_.table.lifetimes()[e.lifetime];
      fmt::format_to(it, "  {:>12}  dev {} {:<24} {:#x}  {}  {}\n", plusBytes(e.bytes), l.device,
                     pool(l.pool), l.address,
                     e.bytes >= 0 ? "born seq " + seq(l.birth) : "freed seq " + seq(l.free_requested),
                     stack(l.stack));
    }
  }
  report.tables.push_back(std::move(pools));
  report.tables.push_back(std::move(stack_table));
  report.tables.push_back(std::move(events));
  return report;
}

}  // namespace

Report attributeReport(const std::string& bundle, const MemoryHistory& history, const Attribution& a,
                       const std::vector<std::string>& stack_texts,
                       const AttributeReportOptions& options) {
  return AttributeReport(bundle, history, a, stack_texts, options).build();
}

}  // namespace tcgd::analyze

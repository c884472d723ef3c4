#include "report/graph_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/format.h"

namespace tcgd::analyze {
namespace {

std::string hexText(uint64_t value) { return fmt::format("0x{:x}", value); }

}  // namespace

void appendGraphsText(const std::vector<GraphInventory>& graphs, size_t max_kernels, bool verbose,
                      std::string* out) {
  if (graphs.empty()) return;
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "Graphs ({} captured)\n", graphs.size());
  for (const auto& g : graphs) {
    std::string counts;
    for (size_t t = 0; t < g.counts.size(); ++t) {
      if (g.counts[t] == 0) continue;
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", kGraphNodeTypeNames[t], g.counts[t]);
    }
    fmt::format_to(it, "  graph {} (stream {}): {} nodes{}{}\n", hexText(g.graph), hexText(g.stream),
                   g.nodes, counts.empty() ? "" : ": ", counts);
    if (g.status != 0) fmt::format_to(it, "    not inventoried (status {})\n", g.status);
    if (g.truncated) {
      fmt::format_to(it, "    truncated: the first {} nodes were examined\n", g.examined);
    }
    if (!g.kernels.empty() && verbose) {
      fmt::format_to(it, "    kernels ({}):\n", g.kernels.size());
      for (const auto& kernel : g.kernels) {
        fmt::format_to(it, "      #{:<3} {}\n", kernel.kernel_index,
                       kernel.short_name.empty() ? hexText(kernel.function) : kernel.short_name);
        if (!kernel.name.empty()) fmt::format_to(it, "           {}\n", kernel.name);
      }
    } else if (!g.kernels.empty()) {
      std::string list;
      for (size_t k = 0; k < g.kernels.size() && k < max_kernels; ++k) {
        const auto& kernel = g.kernels[k];
        list += fmt::format("{}{}", k == 0 ? "" : ", ",
                            kernel.short_name.empty() ? hexText(kernel.function) : kernel.short_name);
      }
      if (g.kernels.size() > max_kernels) {
        list += fmt::format(", ... ({} more)", g.kernels.size() - max_kernels);
      }
      fmt::format_to(it, "    kernels: {}\n", list);
    }
    if (!g.memory.empty()) {
      size_t allocs = 0;
      for (const auto& m : g.memory) allocs += m.alloc;
      fmt::format_to(it, "    memory: {} alloc ({}), {} free\n", allocs, shortBytes(g.alloc_bytes),
                     g.memory.size() - allocs);
      for (const auto& m : g.memory) {
        if (m.alloc) {
          fmt::format_to(it, "      alloc {} {} device {}\n", hexText(m.ptr), shortBytes(m.size), m.device);
        } else {
          fmt::format_to(it, "      free  {}\n", hexText(m.ptr));
        }
      }
    }
  }
}

void writeGraphsJson(const std::vector<GraphInventory>& graphs, JsonWriter& json) {
  json.beginArray();
  for (const auto& g : graphs) {
    json.beginObject();
    json.key("graph").value(g.graph);
    json.key("stream").value(g.stream);
    json.key("sequence").value(g.sequence);
    json.key("time_ns").value(g.time_ns);
    json.key("nodes").value(g.nodes);
    json.key("examined").value(g.examined);
    json.key("truncated").value(g.truncated);
    json.key("status").value(g.status);
    json.key("counts").beginObject();
    for (size_t t = 0; t < g.counts.size(); ++t) json.key(kGraphNodeTypeNames[t]).value(g.counts[t]);
    json.endObject();
    json.key("kernels").beginArray();
    for (const auto& k : g.kernels) {
      json.beginObject();
      json.key("index").value(k.kernel_index);
      json.key("node_index").value(k.node_index);
      json.key("function").value(k.function);
      json.key("name").value(k.name);
      json.key("demangled").value(k.demangled);
      json.key("short_name").value(k.short_name);
      json.key("handle_kind").value(k.from_kern ? "kernel" : "function");
      json.key("grid").beginArray();
      for (uint32_t d : k.grid) json.value(d);
      json.endArray();
      json.key("block").beginArray();
      for (uint32_t d : k.block) json.value(d);
      json.endArray();
      json.key("shared_mem").value(k.shared_mem);
      json.endObject();
    }
    json.endArray();
    json.key("memory").beginArray();
    for (const auto& m : g.memory) {
      json.beginObject();
      json.key("node_index").value(m.node_index);
      json.key("kind").value(m.alloc ? "alloc" : "free");
      json.key("ptr").value(m.ptr);
      if (m.alloc) {
        json.key("size").value(m.size);
        json.key("device").value(m.device);
      }
      json.endObject();
    }
    json.endArray();
    json.key("alloc_bytes").value(g.alloc_bytes);
    json.endObject();
  }
  json.endArray();
}

}  // namespace tcgd::analyze

#include "model/graph_inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tcgd::analyze {
namespace {

// Record types are matched by their schema name (what the bundle says they
// are), as memory/memory_summary.cpp does; the layouts are collectors/record_types.h's.
enum class Kind { kNone, kSummary, kTypes, kKernel, kMem, kKernelName };

Kind classifyName(const std::string& name) {
  if (name == "graph_inventory") return Kind::kSummary;
  if (name == "graph_node_types") return Kind::kTypes;
  if (name == "graph_kernel_node") return Kind::kKernel;
  if (name == "graph_mem_node") return Kind::kMem;
  if (name == "kernel_name") return Kind::kKernelName;
  return Kind::kNone;
}

uint32_t bits(uint64_t word, unsigned shift, unsigned width) {
  return static_cast<uint32_t>((word >> shift) & ((uint64_t{1} << width) - 1));
}

struct Pending {
  std::vector<GraphKernelNode> kernels;
  std::vector<GraphMemNode> memory;
};

std::string hex(uint64_t value) { return fmt::format("0x{:x}", value); }

std::string sizeText(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace

std::vector<GraphInventory> collectGraphInventories(const Bundle& bundle) {
  std::unordered_map<uint32_t, Kind> kinds;
  std::vector<proto::DecodedRecord> wanted;
  (void)bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
    for (const auto& record : records) {
      auto it = kinds.find(record.type);
      if (it == kinds.end()) it = kinds.emplace(record.type, classifyName(bundle.typeName(record.type))).first;
      if (it->second != Kind::kNone) wanted.push_back(record);
    }
  });
  // One thread emits an inventory's records in order; the sequence restores
  // that order across batches.
  std::sort(wanted.begin(), wanted.end(),
            [](const auto& a, const auto& b) { return a.sequence < b.sequence; });

  std::vector<GraphInventory> graphs;
  std::map<uint64_t, Pending> pending;           // by graph handle, until its summary
  std::map<uint64_t, size_t> latest;             // graph handle -> index in graphs
  std::unordered_map<uint64_t, std::string> names;  // function handle -> kernel name
  for (const auto& r : wanted) {
    switch (kinds.at(r.type)) {
      case Kind::kKernel: {
        GraphKernelNode node;
        node.kernel_index = bits(r.words[1], 0, 16);
        node.node_index = bits(r.words[1], 16, 16);
        node.shared_mem = bits(r.words[1], 32, 32);
        node.function = r.words[2];
        node.from_kern = (r.flags & 1) != 0;
        node.grid = {bits(r.words[3], 0, 32), bits(r.words[3], 32, 16), bits(r.words[3], 48, 16)};
        node.block = {bits(r.words[4], 0, 16), bits(r.words[4], 16, 16), bits(r.words[4], 32, 16)};
        pending[r.words[0]].kernels.push_back(node);
        break;
      }
      case Kind::kMem: {
        GraphMemNode node;
        node.node_index = bits(r.words[1], 0, 32);
        node.alloc = bits(r.words[1], 32, 8) == 1;
        node.ptr = r.words[2];
        node.size = r.words[3];
        node.device = static_cast<int32_t>(bits(r.words[4], 0, 32));
        pending[r.words[0]].memory.push_back(node);
        break;
      }
      case Kind::kSummary: {
        GraphInventory g;
        g.sequence = r.sequence;
        g.time_ns = r.time_ns;
        g.graph = r.words[0];
        g.stream = r.words[1];
        g.nodes = bits(r.words[2], 0, 32);
        g.examined = bits(r.words[2], 32, 16);
        g.truncated = bits(r.words[2], 48, 8) != 0;
        g.status = bits(r.words[2], 56, 8);
        // The main types; graph_node_types, right after, has them all.
        static constexpr size_t kMainA[4] = {0, 1, 2, 3};    // kernel memcpy memset host
        static constexpr size_t kMainB[4] = {4, 5, 10, 11};  // child_graph empty mem_alloc mem_free
        for (int k = 0; k < 4; ++k) {
          g.counts[kMainA[k]] = bits(r.words[3], 16 * k, 16);
          g.counts[kMainB[k]] = bits(r.words[4], 16 * k, 16);
        }
        if (auto p = pending.find(g.graph); p != pending.end()) {
          g.kernels = std::move(p->second.kernels);
          g.memory = std::move(p->second.memory);
          pending.erase(p);
        }
        for (const auto& m : g.memory) g.alloc_bytes += m.alloc ? m.size : 0;
        latest[g.graph] = graphs.size();
        graphs.push_back(std::move(g));
        break;
      }
      case Kind::kTypes: {
        auto it = latest.find(r.words[0]);
        if (it == latest.end()) break;
        GraphInventory& g = graphs[it->second];
        for (size_t t = 0; t < g.counts.size(); ++t) {
          g.counts[t] = bits(r.words[1 + t / 4], 16 * static_cast<unsigned>(t % 4), 16);
        }
        break;
      }
      case Kind::kKernelName:
        if (r.words[1] != 0) {
          if (const BlobInfo* blob = bundle.blob(r.words[1])) names[r.words[0]] = blob->data;
        }
        break;
      case Kind::kNone:
        break;
    }
  }
  for (auto& g : graphs) {
    for (auto& k : g.kernels) {
      if (auto n = names.find(k.function); n != names.end()) k.name = n->second;
    }
  }
  return graphs;
}

void appendGraphsText(const std::vector<GraphInventory>& graphs, size_t max_kernels,
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
    fmt::format_to(it, "  graph {} (stream {}): {} nodes{}{}\n", hex(g.graph), hex(g.stream),
                   g.nodes, counts.empty() ? "" : ": ", counts);
    if (g.status != 0) fmt::format_to(it, "    not inventoried (status {})\n", g.status);
    if (g.truncated) {
      fmt::format_to(it, "    truncated: the first {} nodes were examined\n", g.examined);
    }
    if (!g.kernels.empty()) {
      std::string list;
      for (size_t k = 0; k < g.kernels.size() && k < max_kernels; ++k) {
        const auto& kernel = g.kernels[k];
        list += fmt::format("{}{}", k == 0 ? "" : ", ",
                            kernel.name.empty() ? hex(kernel.function) : kernel.name);
      }
      if (g.kernels.size() > max_kernels) {
        list += fmt::format(", ... ({} more)", g.kernels.size() - max_kernels);
      }
      fmt::format_to(it, "    kernels: {}\n", list);
    }
    if (!g.memory.empty()) {
      size_t allocs = 0;
      for (const auto& m : g.memory) allocs += m.alloc;
      fmt::format_to(it, "    memory: {} alloc ({}), {} free\n", allocs, sizeText(g.alloc_bytes),
                     g.memory.size() - allocs);
      for (const auto& m : g.memory) {
        if (m.alloc) {
          fmt::format_to(it, "      alloc {} {} device {}\n", hex(m.ptr), sizeText(m.size), m.device);
        } else {
          fmt::format_to(it, "      free  {}\n", hex(m.ptr));
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

#include "model/graph_inventory.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "model/kernel_names.h"
#include "records/graph_records.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

struct Pending {
  std::vector<GraphKernelNode> kernels;
  std::vector<GraphMemNode> memory;
};

bool inventoryKind(RecordKind kind) {
  return kind == RecordKind::kGraphInventory || kind == RecordKind::kGraphNodeTypes ||
         kind == RecordKind::kGraphKernelNode || kind == RecordKind::kGraphMemNode ||
         kind == RecordKind::kKernelName;
}

}  // namespace

std::vector<GraphInventory> collectGraphInventories(const Bundle& bundle) {
  const RecordCatalog catalog(bundle);
  std::vector<proto::DecodedRecord> wanted;
  (void)bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
    for (const auto& record : records) {
      if (inventoryKind(catalog.kind(record.type))) wanted.push_back(record);
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
    switch (catalog.kind(r.type)) {
      case RecordKind::kGraphKernelNode: {
        const GraphKernelNodeRecord k = GraphKernelNodeRecord::of(r);
        GraphKernelNode node;
        node.kernel_index = k.kernel_index;
        node.node_index = k.node_index;
        node.shared_mem = k.shared_mem;
        node.function = k.function;
        node.from_kern = k.from_kern;
        node.grid = k.grid;
        node.block = k.block;
        pending[k.graph].kernels.push_back(node);
        break;
      }
      case RecordKind::kGraphMemNode: {
        const GraphMemNodeRecord m = GraphMemNodeRecord::of(r);
        pending[m.graph].memory.push_back({m.node_index, m.alloc, m.ptr, m.size, m.device});
        break;
      }
      case RecordKind::kGraphInventory: {
        const GraphInventoryRecord summary = GraphInventoryRecord::of(r);
        GraphInventory g;
        g.sequence = r.sequence;
        g.time_ns = r.time_ns;
        g.graph = summary.graph;
        g.stream = summary.stream;
        g.nodes = summary.nodes;
        g.examined = summary.examined;
        g.truncated = summary.truncated;
        g.status = summary.status;
        // The main types; graph_node_types, right after, has them all.
        static constexpr size_t kMainA[4] = {0, 1, 2, 3};    // kernel memcpy memset host
        static constexpr size_t kMainB[4] = {4, 5, 10, 11};  // child_graph empty mem_alloc mem_free
        for (int k = 0; k < 4; ++k) {
          g.counts[kMainA[k]] = summary.main_a[k];
          g.counts[kMainB[k]] = summary.main_b[k];
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
      case RecordKind::kGraphNodeTypes: {
        const GraphNodeTypesRecord types = GraphNodeTypesRecord::of(r);
        auto it = latest.find(types.graph);
        if (it == latest.end()) break;
        GraphInventory& g = graphs[it->second];
        for (size_t t = 0; t < g.counts.size(); ++t) g.counts[t] = types.counts[t];
        break;
      }
      case RecordKind::kKernelName: {
        const KernelNameRecord name = KernelNameRecord::of(r);
        if (name.name_blob != 0) {
          if (const BlobInfo* blob = bundle.blob(name.name_blob)) names[name.function] = blob->data;
        }
        break;
      }
      default:
        break;
    }
  }
  std::unordered_map<std::string, KernelName> readable;  // each name demangled once
  for (auto& g : graphs) {
    for (auto& k : g.kernels) {
      const auto n = names.find(k.function);
      if (n == names.end()) continue;
      k.name = n->second;
      auto [it, fresh] = readable.try_emplace(k.name);
      if (fresh) it->second = kernelName(k.name);
      k.demangled = it->second.demangled;
      k.short_name = it->second.short_name;
    }
  }
  return graphs;
}

}  // namespace tcgd::analyze

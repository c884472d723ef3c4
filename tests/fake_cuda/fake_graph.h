// Internal to the fake driver: graphs and their nodes, shared by the capture
// code (fake_stream.cpp) and the graph API (fake_graph.cpp).
#pragma once

#include <mutex>
#include <vector>

#include "fake_state.h"

namespace fake {

struct Graph;

struct Node {
  Magic magic = Magic::kNode;
  Graph* graph = nullptr;
  NodeSpec spec;
  std::vector<Node*> deps;  // the nodes this one depends on, all in `graph`
  // Kernel nodes: pointers into spec.params, one per parameter, as
  // cuGraphKernelNodeGetParams hands them out.
  std::vector<void*> param_ptrs;
};

struct Graph {
  Magic magic = Magic::kGraph;
  // Guards `nodes` (and each node's deps): a capture appends from the
  // capturing threads while tests may inspect the graph.
  std::mutex mutex;
  std::vector<Node*> nodes;  // in creation order; never freed, so handles stay readable

  Node* add(NodeSpec spec, const std::vector<Node*>& deps);
  bool owns(const Node* node);
};

bool isGraph(const void* handle);
Node* nodeOf(CUgraphNode handle);
// Marks a graph destroyed (the capture of an invalidated sequence does).
void poisonGraph(Graph* graph);

}  // namespace fake

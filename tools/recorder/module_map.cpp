#include "module_map.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace tcgd::recorder {

std::vector<Module> parseExecutableMappings(const std::string& maps_text) {
  std::vector<Module> out;
  std::istringstream lines(maps_text);
  for (std::string line; std::getline(lines, line);) {
    // start-end perms offset dev inode [path]; the path may contain spaces.
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    if (perms.size() < 3 || perms[2] != 'x') continue;
    std::string path;
    std::getline(fields, path);
    const size_t first = path.find_first_not_of(' ');
    if (first == std::string::npos) continue;  // anonymous: nothing to name
    path.erase(0, first);
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    Module m;
    m.start = std::strtoull(range.substr(0, dash).c_str(), nullptr, 16);
    m.end = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16);
    m.path = std::move(path);
    if (m.end > m.start) out.push_back(std::move(m));
  }
  return out;
}

bool ModuleTracker::refresh(uint64_t now_ns, std::vector<Module>* fresh) {
  deferred_miss_ = false;
  last_read_ns_ = now_ns;
  if (maps_path_.empty()) return false;
  std::ifstream in(maps_path_);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<Module> read = parseExecutableMappings(text.str());
  if (read.empty()) return false;  // an exiting job shows an empty maps file
  ++rereads_;
  for (Module& m : read) {
    std::string key = std::to_string(m.start) + "-" + std::to_string(m.end) + " " + m.path;
    if (!known_.insert(std::move(key)).second) continue;
    fresh->push_back(m);
    modules_.push_back(std::move(m));
  }
  std::sort(modules_.begin(), modules_.end(),
            [](const Module& a, const Module& b) { return a.start < b.start; });
  last_hit_ = 0;
  return true;
}

bool ModuleTracker::contains(uint64_t addr) const {
  if (last_hit_ < modules_.size() && addr >= modules_[last_hit_].start &&
      addr < modules_[last_hit_].end)
    return true;
  // The last module starting at or below addr. Mappings replaced by a later
  // library at the same range stay listed; either answer places the address.
  auto it = std::upper_bound(modules_.begin(), modules_.end(), addr,
                             [](uint64_t a, const Module& m) { return a < m.start; });
  // Entries overlap only when a library was unloaded and another mapped over
  // its range; a short backwards scan covers that.
  for (int steps = 0; it != modules_.begin() && steps < 8; ++steps) {
    --it;
    if (addr < it->end) {
      last_hit_ = static_cast<size_t>(it - modules_.begin());
      return true;
    }
  }
  return false;
}

bool ModuleTracker::noteAddress(uint64_t addr, uint64_t now_ns, std::vector<Module>* fresh) {
  if (addr == 0 || maps_path_.empty() || contains(addr)) return false;
  if (unplaceable_.count(addr) != 0) return false;
  if (last_read_ns_ != 0 && now_ns - last_read_ns_ < kMinRereadNs) {
    deferred_miss_ = true;
    return false;
  }
  const size_t before = fresh->size();
  if (!refresh(now_ns, fresh)) return false;
  if (!contains(addr)) {
    if (unplaceable_.size() >= kMaxRememberedMisses) unplaceable_.clear();
    unplaceable_.insert(addr);
  }
  return fresh->size() > before;
}

}  // namespace tcgd::recorder

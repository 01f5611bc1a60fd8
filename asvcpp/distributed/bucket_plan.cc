// Bucket layout for the gradient reducer (bucket_plan.h): DDP's bucket assignment and the
// flattening of parameter and buffer chunks.
#include "asvcpp/distributed/bucket_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace asv::distributed {
namespace {

// Gloo has no bool reductions/broadcasts in every version: move bools as bytes.
torch::ScalarType WireType(torch::ScalarType t) {
  return t == torch::kBool ? torch::kUInt8 : t;
}

}  // namespace

BucketPlan MakePlan(const std::vector<torch::Tensor>& params, std::size_t first_cap, std::size_t cap,
                    const torch::Device& device) {
  BucketPlan plan;
  plan.params = params;
  using Key = std::pair<int, std::string>;
  std::map<Key, std::size_t> open;  // -> index into `made`
  std::map<Key, int> closed_count;
  std::vector<Bucket> made;
  std::vector<std::size_t> bytes;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const Key key{static_cast<int>(p.scalar_type()), p.device().str()};
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, made.size()).first;
      made.emplace_back();
      bytes.push_back(0);
    }
    Bucket& b = made[it->second];
    b.members.push_back(i);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bytes[it->second] += static_cast<std::size_t>(p.numel()) * p.element_size();
    const std::size_t limit = closed_count[key] == 0 ? first_cap : cap;
    if (bytes[it->second] >= limit) {
      ++closed_count[key];
      open.erase(it);
    }
  }
  std::sort(made.begin(), made.end(),
            [](const Bucket& a, const Bucket& b) { return a.members.front() < b.members.front(); });
  plan.bucket_of.assign(params.size(), 0);
  for (std::size_t k = 0; k < made.size(); ++k) {
    auto& b = made[k];
    const auto& first = params[b.members.front()];
    b.flat = torch::zeros({b.numel + static_cast<std::int64_t>(b.members.size())},
                          torch::TensorOptions().dtype(first.scalar_type()).device(device));
    for (auto m : b.members) plan.bucket_of[m] = k;
  }
  plan.buckets = std::move(made);
  for (std::size_t i = 0; i < params.size(); ++i) plan.index.emplace(params[i].unsafeGetTensorImpl(), i);
  return plan;
}

bool SameSet(const BucketPlan& plan, const std::vector<torch::Tensor>& params) {
  std::size_t n = 0;
  for (const auto& p : params) {
    if (!p.requires_grad()) continue;
    if (!plan.index.count(p.unsafeGetTensorImpl())) return false;
    ++n;
  }
  return n == plan.params.size();
}

std::vector<std::vector<torch::Tensor>> Chunks(const std::vector<torch::Tensor>& tensors, std::size_t cap) {
  std::vector<std::vector<torch::Tensor>> chunks;
  std::map<std::pair<int, std::string>, std::pair<std::size_t, std::size_t>> open;  // -> chunk, bytes
  for (const auto& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    const auto key = std::make_pair(static_cast<int>(t.scalar_type()), t.device().str());
    const std::size_t size = static_cast<std::size_t>(t.numel()) * t.element_size();
    auto it = open.find(key);
    if (it == open.end() || it->second.second + size > cap) {
      chunks.emplace_back();
      it = open.insert_or_assign(key, std::make_pair(chunks.size() - 1, std::size_t{0})).first;
    }
    chunks[it->second.first].push_back(t);
    it->second.second += size;
  }
  return chunks;
}

torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors, const torch::Device& device) {
  std::vector<torch::Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(t.reshape({-1}));
  return torch::cat(parts).to(device, WireType(tensors.front().scalar_type()));
}

void Unflatten(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace asv::distributed

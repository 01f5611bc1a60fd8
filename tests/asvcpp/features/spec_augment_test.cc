#include "asvcpp/features/spec_augment.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "asvcpp/base/error.h"

namespace asv::features {
namespace {

at::Generator CpuGenerator(std::uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// Features without zeros (values in [1, 2)), so a 0 in the output is a mask.
torch::Tensor Features(std::int64_t batch, std::int64_t frames, std::int64_t dim, std::uint64_t seed) {
  return torch::rand({batch, frames, dim}, CpuGenerator(seed)) + 1.0f;
}

// Runs of consecutive true values of `line`: (start, width).
std::vector<std::pair<std::int64_t, std::int64_t>> Runs(const std::vector<bool>& line) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (!line[i]) continue;
    if (i == 0 || !line[i - 1]) runs.emplace_back(static_cast<std::int64_t>(i), 0);
    ++runs.back().second;
  }
  return runs;
}

// Zeroed frames and dimensions of one segment.
struct Masks {
  std::vector<bool> frames;  // whole frame zero
  std::vector<bool> dims;    // whole dimension zero
};

std::vector<bool> Bools(const torch::Tensor& line) {
  const auto a = line.accessor<bool, 1>();
  std::vector<bool> v(static_cast<std::size_t>(line.size(0)));
  for (std::int64_t i = 0; i < line.size(0); ++i) v[static_cast<std::size_t>(i)] = a[i];
  return v;
}

// Checks that every zero of `out` [batch, frames, dim] lies in a fully zeroed frame or dimension
// of its segment and that every other value is the input's (no lone zeros, nothing else
// changed); returns each segment's zeroed frames and dimensions.
std::vector<Masks> Inspect(const torch::Tensor& in, const torch::Tensor& out) {
  const torch::Tensor zero = out.eq(0);
  const torch::Tensor frames = zero.all(2), dims = zero.all(1);  // [batch, frames], [batch, dim]
  const torch::Tensor masked = frames.unsqueeze(2).logical_or(dims.unsqueeze(1));
  EXPECT_TRUE(torch::equal(out, torch::where(masked, torch::zeros_like(in), in)));
  std::vector<Masks> m;
  for (std::int64_t b = 0; b < in.size(0); ++b) m.push_back({Bools(frames[b]), Bools(dims[b])});
  return m;
}

TEST(SpecAugmentOptions, DefaultsAreWespeakers) {
  const SpecAugmentOptions o;
  EXPECT_EQ(o.num_t_mask, 1);
  EXPECT_EQ(o.num_f_mask, 1);
  EXPECT_EQ(o.max_t, 10);
  EXPECT_EQ(o.max_f, 8);
  EXPECT_EQ(o.prob, 0.6);
  EXPECT_NO_THROW(o.Validate());
}

// WeSpeaker's defaults over 4,000 segments of 200 frames x 80 dims: each augmented segment has
// exactly one zeroed run of 1..10 frames and one of 1..8 dimensions (one mask each never
// splits), every other value untouched; widths shorter than the maximum only where a mask is cut
// by the end, every width 1..max seen; the fraction augmented is 0.6 within 0.05 (its standard
// deviation is 0.0077 here: 6.5 sigma).
TEST(SpecAugment, WespeakerDefaultsMasksWithinBounds) {
  const SpecAugmentOptions o;
  const std::int64_t batch = 4000, frames = 200, dim = 80;
  const torch::Tensor in = Features(batch, frames, dim, 1);
  const torch::Tensor out = SpecAugment(in, o, CpuGenerator(2));
  ASSERT_EQ(out.sizes(), in.sizes());
  EXPECT_EQ(out.scalar_type(), in.scalar_type());
  const std::vector<Masks> masks = Inspect(in, out);
  std::int64_t augmented = 0;
  std::vector<int> t_widths(static_cast<std::size_t>(o.max_t) + 1, 0), f_widths(static_cast<std::size_t>(o.max_f) + 1, 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const Masks& m = masks[static_cast<std::size_t>(b)];
    const auto t = Runs(m.frames), f = Runs(m.dims);
    if (t.empty() && f.empty()) continue;
    ++augmented;
    ASSERT_EQ(t.size(), 1u) << b;
    ASSERT_EQ(f.size(), 1u) << b;
    ASSERT_GE(t[0].second, 1);
    ASSERT_LE(t[0].second, o.max_t);
    ASSERT_GE(f[0].second, 1);
    ASSERT_LE(f[0].second, o.max_f);
    ++t_widths[static_cast<std::size_t>(t[0].second)];
    ++f_widths[static_cast<std::size_t>(f[0].second)];
  }
  for (int w = 1; w <= o.max_t; ++w) EXPECT_GT(t_widths[static_cast<std::size_t>(w)], 0) << "time width " << w;
  for (int w = 1; w <= o.max_f; ++w) EXPECT_GT(f_widths[static_cast<std::size_t>(w)], 0) << "freq width " << w;
  EXPECT_NEAR(static_cast<double>(augmented) / batch, o.prob, 0.05);
}

// Several masks per segment, wider than the segment allows, the last frame and dimension
// reachable: zeroed frames at most num_t_mask runs and num_t_mask x max_t frames (overlaps merge),
// likewise for dimensions; with prob 1 every segment is augmented.
TEST(SpecAugment, SeveralMasksAndEdges) {
  SpecAugmentOptions o;
  o.num_t_mask = 3;
  o.num_f_mask = 2;
  o.max_t = 4;
  o.max_f = 3;
  o.prob = 1.0;
  const std::int64_t batch = 2000, frames = 16, dim = 9;  // never fully masked
  const torch::Tensor in = Features(batch, frames, dim, 3);
  const torch::Tensor out = SpecAugment(in, o, CpuGenerator(4));
  const std::vector<Masks> masks = Inspect(in, out);
  bool last_frame = false, last_dim = false, first_frame = false;
  for (std::int64_t b = 0; b < batch; ++b) {
    const Masks& m = masks[static_cast<std::size_t>(b)];
    const auto t = Runs(m.frames), f = Runs(m.dims);
    ASSERT_GE(t.size(), 1u);
    ASSERT_LE(t.size(), 3u);
    ASSERT_GE(f.size(), 1u);
    ASSERT_LE(f.size(), 2u);
    ASSERT_LE(std::count(m.frames.begin(), m.frames.end(), true), 3 * 4);
    ASSERT_LE(std::count(m.dims.begin(), m.dims.end(), true), 2 * 3);
    last_frame = last_frame || m.frames.back();
    first_frame = first_frame || m.frames.front();
    last_dim = last_dim || m.dims.back();
  }
  EXPECT_TRUE(last_frame);
  EXPECT_TRUE(first_frame);
  EXPECT_TRUE(last_dim);
  o.prob = 0.0;
  EXPECT_TRUE(torch::equal(SpecAugment(in, o, CpuGenerator(4)), in));
}

TEST(SpecAugment, ReproducibleForASeedAndKeepsTheInput) {
  const SpecAugmentOptions o;
  const torch::Tensor in = Features(64, 200, 80, 5);
  const torch::Tensor before = in.clone();
  const torch::Tensor a = SpecAugment(in, o, CpuGenerator(7));
  EXPECT_TRUE(torch::equal(a, SpecAugment(in, o, CpuGenerator(7))));
  EXPECT_FALSE(torch::equal(a, SpecAugment(in, o, CpuGenerator(8))));
  EXPECT_TRUE(torch::equal(in, before));
  torch::manual_seed(3);
  const torch::Tensor d = SpecAugment(in, o);
  torch::manual_seed(3);
  EXPECT_TRUE(torch::equal(SpecAugment(in, o), d));
  // Shapes kept, empty tensors included; float64 works too.
  EXPECT_EQ(SpecAugment(torch::zeros({3, 0, 80}), o, CpuGenerator(1)).sizes(), (std::vector<std::int64_t>{3, 0, 80}));
  const torch::Tensor wide = SpecAugment(in.to(torch::kFloat64), o, CpuGenerator(7));
  EXPECT_EQ(wide.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::equal(wide.to(torch::kFloat32), a));
}

TEST(SpecAugment, BadInput) {
  SpecAugmentOptions o;
  EXPECT_THROW(SpecAugment(torch::zeros({200, 80}), o), std::invalid_argument);
  EXPECT_THROW(SpecAugment(torch::zeros({1, 200, 80}, torch::kInt32), o), std::invalid_argument);
  o.max_t = 0;
  EXPECT_THROW(SpecAugment(torch::ones({1, 200, 80}), o), ConfigError);
  o = SpecAugmentOptions{};
  o.prob = 1.5;
  EXPECT_THROW(o.Validate(), ConfigError);
  o = SpecAugmentOptions{};
  o.num_f_mask = -1;
  EXPECT_THROW(o.Validate(), ConfigError);
}

}  // namespace
}  // namespace asv::features

#include "asvcpp/models/wespeaker_config.h"

#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/features/feature_options.h"

namespace asv::models {
namespace {

namespace stdfs = std::filesystem;

class ConfigReader {
 public:
  explicit ConfigReader(const stdfs::path& path) : path_(path) {
    const std::string text = fs::ReadFile(path);
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw DataError(fmt::format("{}: not YAML: {}", path.string(), e.what()));
    }
    if (!root_.IsMap()) throw DataError(fmt::format("{}: not a YAML mapping of WeSpeaker's settings", path.string()));
  }

  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    throw DataError(fmt::format("{}: {}: {}", path_.string(), key, what));
  }

  // The node at `dotted` ("a.b.c"), or an undefined node.
  YAML::Node Find(const std::string& dotted) const {
    YAML::Node node;
    node.reset(root_);  // yaml-cpp's operator= would assign into the tree
    std::size_t start = 0;
    while (true) {
      const auto dot = dotted.find('.', start);
      const std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      const YAML::Node& parent = node;
      const YAML::Node next = parent[part];
      if (!next) return YAML::Node(YAML::NodeType::Undefined);
      node.reset(next);
      if (dot == std::string::npos) return node;
      start = dot + 1;
    }
  }

  template <class T>
  std::optional<T> Get(const std::string& key) const {
    const YAML::Node node = Find(key);
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      Fail(key, fmt::format("'{}' is not {}", YAML::Dump(node), TypeName<T>()));
    }
  }

  template <class T>
  T Require(const std::string& key) const {
    auto v = Get<T>(key);
    if (!v) Fail(key, "missing");
    return *v;
  }

  // Every key of the mapping `group` must be in `known`.
  void OnlyKnownKeys(const std::string& group, const std::set<std::string>& known) const {
    const YAML::Node node = Find(group);
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) Fail(group, "not a mapping");
    for (const auto& item : node) {
      const auto key = item.first.as<std::string>();
      if (known.count(key) == 0) {
        Fail(group + "." + key,
             fmt::format("asvcpp's models have no such setting (it knows {})", fmt::join(known, ", ")));
      }
    }
  }

 private:
  template <class T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, bool>) return "a boolean";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "a string";
  }

  stdfs::path path_;
  YAML::Node root_;
};

// A float as YAML writes it so that Python's yaml reads a float: 1.0, not 1 (yaml-cpp's form).
std::string Float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string WespeakerPooling(const std::string& model) {
  if (model == "ResNet34") return "TSTP";
  for (const char* ecapa : {"ECAPA_TDNN_c512", "ECAPA_TDNN_GLOB_c512", "ECAPA_TDNN_c1024", "ECAPA_TDNN_GLOB_c1024"}) {
    if (model == ecapa) return "ASTP";
  }
  throw DataError(
      fmt::format("model: asvcpp has no model '{}' (it has ResNet34, ECAPA_TDNN_c512, "
                  "ECAPA_TDNN_GLOB_c512, ECAPA_TDNN_c1024, ECAPA_TDNN_GLOB_c1024)",
                  model));
}

WespeakerConfig ReadWespeakerConfig(const stdfs::path& path) {
  const ConfigReader r(path);
  WespeakerConfig c;
  c.model = r.Require<std::string>("model");
  std::string pooling;
  try {
    pooling = WespeakerPooling(c.model);
  } catch (const DataError& e) {
    throw DataError(fmt::format("{}: {}", path.string(), e.what()));
  }
  const bool resnet = c.model == "ResNet34";
  r.OnlyKnownKeys("model_args", resnet ? std::set<std::string>{"feat_dim", "embed_dim", "pooling_func", "two_emb_layer"}
                                       : std::set<std::string>{"feat_dim", "embed_dim", "pooling_func", "emb_bn"});
  c.feat_dim = r.Require<std::int64_t>("model_args.feat_dim");
  c.embed_dim = r.Require<std::int64_t>("model_args.embed_dim");
  if (c.feat_dim < 1 || c.embed_dim < 1) r.Fail("model_args", "feat_dim and embed_dim must be positive");
  if (const auto p = r.Get<std::string>("model_args.pooling_func"); p && *p != pooling) {
    r.Fail("model_args.pooling_func", fmt::format("asvcpp's {} pools with {}, not {}", c.model, pooling, *p));
  }
  for (const char* flag : {"model_args.two_emb_layer", "model_args.emb_bn"}) {
    if (r.Get<bool>(flag).value_or(false))
      r.Fail(flag, fmt::format("asvcpp's {} has no such layer (only False)", c.model));
  }

  r.OnlyKnownKeys("projection_args",
                  {"project_type", "scale", "easy_margin", "margin", "embed_dim", "num_class", "do_lm"});
  c.project_type = r.Get<std::string>("projection_args.project_type").value_or(c.project_type);
  if (c.project_type != "arc_margin" && c.project_type != "add_margin" && c.project_type != "softmax") {
    r.Fail("projection_args.project_type",
           fmt::format("asvcpp has no head '{}' (arc_margin, add_margin, softmax)", c.project_type));
  }
  c.scale = r.Get<double>("projection_args.scale").value_or(c.scale);
  c.easy_margin = r.Get<bool>("projection_args.easy_margin").value_or(c.easy_margin);
  c.margin = r.Get<double>("projection_args.margin").value_or(c.margin);
  c.num_class = r.Get<std::int64_t>("projection_args.num_class");
  if (const auto e = r.Get<std::int64_t>("projection_args.embed_dim"); e && *e != c.embed_dim) {
    r.Fail("projection_args.embed_dim", fmt::format("{} differs from model_args.embed_dim {}", *e, c.embed_dim));
  }

  if (const auto f = r.Get<std::string>("dataset_args.frontend"); f && *f != "fbank") {
    r.Fail("dataset_args.frontend", fmt::format("asvcpp computes Kaldi fbank only, not '{}'", *f));
  }
  if (!r.Get<bool>("dataset_args.cmvn").value_or(true)) {
    r.Fail("dataset_args.cmvn", "asvcpp's models always see utterance-mean-subtracted fbank (cmvn True)");
  }
  if (!r.Get<bool>("dataset_args.cmvn_args.norm_mean").value_or(true) ||
      r.Get<bool>("dataset_args.cmvn_args.norm_var").value_or(false)) {
    r.Fail("dataset_args.cmvn_args", "asvcpp subtracts the mean only (norm_mean True, norm_var False)");
  }
  c.sample_rate = r.Get<int>("dataset_args.resample_rate").value_or(c.sample_rate);
  c.num_mel_bins = r.Get<int>("dataset_args.fbank_args.num_mel_bins").value_or(static_cast<int>(c.feat_dim));
  c.frame_shift = r.Get<int>("dataset_args.fbank_args.frame_shift").value_or(c.frame_shift);
  c.frame_length = r.Get<int>("dataset_args.fbank_args.frame_length").value_or(c.frame_length);
  c.dither = r.Get<double>("dataset_args.fbank_args.dither").value_or(c.dither);
  if (c.num_mel_bins != c.feat_dim) {
    r.Fail("dataset_args.fbank_args.num_mel_bins",
           fmt::format("{} differs from model_args.feat_dim {}", c.num_mel_bins, c.feat_dim));
  }
  if (c.sample_rate < 1000 || c.frame_shift < 1 || c.frame_length < c.frame_shift) {
    r.Fail("dataset_args", fmt::format("resample_rate {} Hz, frame_shift {} ms and frame_length {} ms are not a "
                                       "valid fbank",
                                       c.sample_rate, c.frame_shift, c.frame_length));
  }
  return c;
}

features::FbankOptions FbankOptionsOf(const WespeakerConfig& config) {
  auto options = features::WespeakerFbankOptions();
  options.frame_opts.samp_freq = static_cast<float>(config.sample_rate);
  options.mel_opts.num_bins = config.num_mel_bins;
  options.frame_opts.frame_length_ms = static_cast<float>(config.frame_length);
  options.frame_opts.frame_shift_ms = static_cast<float>(config.frame_shift);
  options.frame_opts.dither = 0.0f;
  return options;
}

void WriteWespeakerConfig(const stdfs::path& path, const WespeakerConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << c.model;
  out << YAML::Key << "model_args" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "feat_dim" << YAML::Value << c.feat_dim;
  out << YAML::Key << "embed_dim" << YAML::Value << c.embed_dim;
  out << YAML::Key << "pooling_func" << YAML::Value << WespeakerPooling(c.model);
  out << YAML::Key << (c.model == "ResNet34" ? "two_emb_layer" : "emb_bn") << YAML::Value << false;
  out << YAML::EndMap;
  out << YAML::Key << "projection_args" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "project_type" << YAML::Value << c.project_type;
  out << YAML::Key << "scale" << YAML::Value << Float(c.scale);
  out << YAML::Key << "easy_margin" << YAML::Value << c.easy_margin;
  out << YAML::Key << "margin" << YAML::Value << Float(c.margin);
  out << YAML::Key << "embed_dim" << YAML::Value << c.embed_dim;
  if (c.num_class) out << YAML::Key << "num_class" << YAML::Value << *c.num_class;
  out << YAML::EndMap;
  out << YAML::Key << "dataset_args" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "resample_rate" << YAML::Value << c.sample_rate;
  out << YAML::Key << "fbank_args" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "num_mel_bins" << YAML::Value << c.num_mel_bins;
  out << YAML::Key << "frame_shift" << YAML::Value << c.frame_shift;
  out << YAML::Key << "frame_length" << YAML::Value << c.frame_length;
  out << YAML::Key << "dither" << YAML::Value << Float(c.dither);
  out << YAML::EndMap;
  out << YAML::Key << "cmvn" << YAML::Value << true;
  out << YAML::Key << "cmvn_args" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "norm_mean" << YAML::Value << true;
  out << YAML::Key << "norm_var" << YAML::Value << false;
  out << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::EndMap;
  fs::WriteFileAtomic(path, std::string(out.c_str()) + "\n");
}

}  // namespace asv::models

#include "recipes/shared/xvector/onnx_front_end.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/enum_names.h"
#include "asvcpp/enums/feature_types.h"
#include "asvcpp/features/kaldi_options.h"

namespace asv::recipes::xvector {

deploy::OnnxFrontEnd XvectorOnnxFrontEnd(const settings::Settings& common) {
  const auto& f = common.features;
  if (f.cmvn == features::Cmvn::kMeanVariance) {
    throw ConfigError("features.cmvn = 'mv': the ONNX front end normalises means only ('m' or '')");
  }
  if (f.deltas != features::Deltas::kBase) {
    throw ConfigError(fmt::format("features.deltas = '{}': the ONNX front end has no deltas ('b' only)",
                                  EnumToName(f.deltas)));
  }
  deploy::OnnxFrontEnd front_end;
  front_end.kind = deploy::OnnxFrontEnd::Kind::kMfcc;
  front_end.mfcc = features::ReadKaldiConfig<features::MfccOptions>(common.paths.kaldi_mfcc_conf_file);
  front_end.cmn_window = f.cmvn == features::Cmvn::kMean ? f.cmvn_window : 0;
  if (f.sad_enabled) front_end.vad = features::VadOptions::VoxcelebV2();
  return front_end;
}

}  // namespace asv::recipes::xvector

// Stage 1 of the x-vector recipes (voxceleb/xvector, sitw/xvector): Kaldi-compatible MFCCs and
// energy VAD for every utterance of the datasets in recipe.feature_extraction_datasets (ASVtorch's
// asvtorch_extract_feats.sh), with prep::ExtractDatasetFeatures (asvcpp/prep/dataset_features.h:
// the files written, determinism, atomicity).
#pragma once

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::xvector {

/// Runs stage 1 for the recipe settings `context` holds: checks that every dataset of
/// recipe.feature_extraction_datasets has a list folder before extracting any (DataError naming the
/// dataset otherwise, also when the list is empty), then prep::ExtractDatasetFeatures for each,
/// logs its Summary() and records the outputs as artifacts (mfcc.ark, feats.scp, utt2num_frames:
/// "features"; vad.ark, vad.scp: "vad"; skipped_utterances: "list").
void RunFeatureStage(recipe::RunContext& context);

}  // namespace asv::recipes::xvector

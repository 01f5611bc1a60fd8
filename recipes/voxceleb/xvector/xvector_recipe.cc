#include "recipes/voxceleb/xvector/xvector_recipe.h"

namespace asv::recipes::voxceleb_xvector {

std::vector<recipe::StageInfo> XvectorRecipe::stages() const {
  return {
      {0, "prepare", "VoxCeleb1/VoxCeleb2 utterance lists (wav.scp, utt2spk, spk2utt) and trial lists", false},
      {1, "features", "Kaldi-compatible MFCCs and energy VAD", false},
      {2, "augmentation", "MUSAN noise/music/babble and reverberated copies of the training data", false},
      {5, "train", "x-vector network training with EER-based early stopping", true},
      {7, "embeddings", "x-vector extraction for the trial and PLDA data", false},
      {9, "scoring", "centering, whitening, length norm, PLDA scoring, optional s-norm and calibration, EER and minDCF",
       false},
  };
}

std::unique_ptr<recipe::RecipeSettings> XvectorRecipe::NewSettings() const {
  return std::make_unique<XvectorSettings>();
}

}  // namespace asv::recipes::voxceleb_xvector

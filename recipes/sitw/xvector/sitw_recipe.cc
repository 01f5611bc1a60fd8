#include "recipes/sitw/xvector/sitw_recipe.h"

namespace asv::recipes::sitw_xvector {

std::vector<recipe::StageInfo> SitwRecipe::stages() const {
  return {
      {0, "prepare", "VoxCeleb1/VoxCeleb2 (and their per-video concatenations) and SITW lists and trial lists",
       false},
      {1, "features", "Kaldi-compatible MFCCs and energy VAD", false},
      {2, "augmentation", "MUSAN noise/music/babble and reverberated copies of the training data", false},
      {5, "train", "x-vector network training with EER-based early stopping on the SITW lists", true},
      {7, "embeddings", "x-vector extraction for the SITW trial and the PLDA data", false},
      {9, "scoring", "centering, whitening, length norm, PLDA scoring, optional s-norm and calibration, EER and minDCF",
       false},
  };
}

std::unique_ptr<recipe::RecipeSettings> SitwRecipe::NewSettings() const {
  return std::make_unique<SitwSettings>();
}

}  // namespace asv::recipes::sitw_xvector

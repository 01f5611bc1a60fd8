// Stage 8 of voxceleb/margin: embeddings of whole utterances (fbank without dither, utterance
// mean subtracted) with the model of ModelForExtraction (stage_train.h): the averaged model of
// stage 7, or of stage 6 without fine-tuning, or recipe.selected_epoch's checkpoint:
// the trial utterances of recipe.trial_lists as <system>/embeddings/trial.{ark,scp}, and
// recipe.backend_utterances random training utterances as <system>/embeddings/plda.{ark,scp}
// with plda.utt2spk (the data stage 9's back end trains on: the mean cosine scoring subtracts).
#pragma once

namespace asv::recipe {
class RunContext;
}

namespace asv::recipes::voxceleb_margin {

/// Runs stage 8. Throws DataError for a missing model or PCM store and when no trial list exists.
void RunEmbeddingExtraction(recipe::RunContext& context);

}  // namespace asv::recipes::voxceleb_margin

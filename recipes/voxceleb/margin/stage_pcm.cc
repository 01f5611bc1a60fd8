#include "recipes/voxceleb/margin/stage_pcm.h"

#include <algorithm>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/data/table.h"
#include "asvcpp/recipe/run_context.h"
#include "recipes/voxceleb/margin/margin_recipe.h"

namespace asv::recipes::voxceleb_margin {
namespace stdfs = std::filesystem;

stdfs::path PcmFolder(const stdfs::path& dataset_root, std::string_view dataset) {
  return dataset_root / std::string(dataset) / "pcm";
}

void RunPcmStage(recipe::RunContext& context) {
  const auto& settings = SettingsOf(context);
  const stdfs::path root = context.feature_and_list_folder();
  for (const auto& dataset : settings.recipe().pcm_datasets) {
    const stdfs::path wav_scp = data::ListFolder(root, dataset) / data::kWavScp;
    if (!stdfs::exists(wav_scp)) {
      throw DataError(fmt::format("{} does not exist: prepare dataset '{}' first (stage 0)", wav_scp.string(), dataset));
    }
    const auto table = data::ReadTable(wav_scp, data::ValueFormat::kRestOfLine);
    std::vector<data::PcmStoreEntry> entries;
    entries.reserve(table.size());
    for (const auto& [id, source] : table) entries.push_back({id, source});
    data::PcmStoreOptions options;
    options.threads = std::max(1, settings.common().computing.feature_extraction_workers);
    const stdfs::path folder = PcmFolder(root, dataset);
    ASV_LOG(Info, "PCM store of {} ({} utterances) in {}", dataset, entries.size(), folder.string());
    // A build logs its summary and the skipped files; a complete store is only reported.
    const auto report = data::BuildPcmStore(entries, folder, options);
    if (report.already_complete) ASV_LOG(Info, "{}", report.Summary());
    // The samples are recorded with the checksum their build computed (pcm.bin.sha256, in
    // sha256sum's format), not read again: VoxCeleb2's take minutes to hash.
    const stdfs::path samples = folder / std::string(data::kPcmDataFile);
    const std::string sidecar = asv::fs::ReadFile(stdfs::path(samples.string() + ".sha256"));
    context.RecordArtifactWithChecksum(samples, "pcm", "sha256:" + sidecar.substr(0, sidecar.find_first_of(" \n")));
    for (const auto name : {data::kPcmIndexFile, data::kPcmHeaderFile, data::kPcmSkippedFile}) {
      context.RecordArtifact(folder / std::string(name), "pcm");
    }
  }
}

}  // namespace asv::recipes::voxceleb_margin

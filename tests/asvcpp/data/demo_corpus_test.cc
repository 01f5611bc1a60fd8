// End-to-end check of tools/make_demo_corpus.py with the VoxCeleb preparation and the audio
// decoder: generates the --small corpus (needs python3, espeak-ng and ffmpeg; skipped otherwise),
// prepares voxceleb1, voxceleb2 and voxceleb2_cat, checks the lists and decodes samples.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>

#include "asvcpp/audio/audio_source.h"
#include "asvcpp/audio/decode.h"
#include "asvcpp/audio/subprocess.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/trial_list.h"
#include "asvcpp/data/voxceleb.h"
#include "tests/asvcpp/data/data_test_util.h"
#include "tests/build_paths.h"

namespace asv::data {
namespace {

using testing::TempDir;

bool HaveProgram(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

std::size_t NonEmptyLines(const std::string& text) {
  std::size_t n = 0;
  bool content = false;
  for (const char c : text) {
    if (c == '\n') {
      n += content;
      content = false;
    } else if (c != ' ' && c != '\r' && c != '\t') {
      content = true;
    }
  }
  return n + content;
}

class DemoCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"python3", "espeak-ng", "ffmpeg"}) {
      if (!HaveProgram(tool)) GTEST_SKIP() << tool << " not installed (Debian packages espeak-ng, ffmpeg)";
    }
  }

  static audio::ProcessResult Generate(const std::filesystem::path& out) {
    return audio::RunProcess({"python3", std::string(ASV_SOURCE_DIR) + "/tools/make_demo_corpus.py",
                              "--small", "--jobs", "2", "--out", out.string()});
  }
};

TEST_F(DemoCorpusTest, SmallCorpusPreparesAndDecodes) {
  TempDir dir("demo_corpus");
  const auto corpus = dir / "corpus";
  const audio::ProcessResult generated = Generate(corpus);
  ASSERT_TRUE(generated.ok()) << generated.Describe() << "\n" << generated.output;

  const auto root = DatasetRoot(dir / "out", "datasets");
  const PreparedDataset vox1 = PrepareVoxCeleb1(corpus / "voxceleb1", root);
  const std::vector<PreparedDataset> vox2 = PrepareVoxCeleb2(corpus / "voxceleb2", root);

  // --small: 5 training speakers and 3 test speakers, 2 videos each, 2 utterances per video.
  EXPECT_EQ(vox1.speakers, 3u);
  EXPECT_EQ(vox1.utterances, 12u);
  ASSERT_EQ(vox2.size(), 2u);
  EXPECT_EQ(vox2[0].speakers, 5u);
  EXPECT_EQ(vox2[0].utterances, 20u);
  EXPECT_EQ(vox2[1].utterances, 10u);

  const DataDir d1 = DataDir::Load(vox1.list_folder);
  const DataDir d2 = DataDir::Load(vox2[0].list_folder);
  const DataDir cat = DataDir::Load(vox2[1].list_folder);
  const std::regex utt_id("id[0-9]{5}-[A-Za-z0-9][A-Za-z0-9_-]{10}-[0-9]{5}");
  const std::regex video_id("id[0-9]{5}-[A-Za-z0-9][A-Za-z0-9_-]{10}");
  std::set<std::string> test_speakers, train_speakers;
  for (const auto& [utt, spk] : d1.utt2spk) {
    EXPECT_TRUE(std::regex_match(utt, utt_id)) << utt;
    EXPECT_EQ(utt.substr(0, spk.size() + 1), spk + "-");
    test_speakers.insert(spk);
  }
  for (const auto& [utt, spk] : d2.utt2spk) {
    EXPECT_TRUE(std::regex_match(utt, utt_id)) << utt;
    train_speakers.insert(spk);
  }
  for (const auto& [utt, spk] : cat.utt2spk) EXPECT_TRUE(std::regex_match(utt, video_id)) << utt;
  for (const auto& spk : test_speakers) EXPECT_EQ(train_speakers.count(spk), 0u) << spk;
  EXPECT_TRUE(IsSortedBySpeaker(d1.utt2spk));
  EXPECT_TRUE(IsSortedBySpeaker(d2.utt2spk));

  // The trial list: every line converted, balanced, every utterance known.
  ASSERT_EQ(vox1.trial_lists, (std::vector<std::string>{"veri_test.txt"}));
  const TrialList trials = ReadTrialList(vox1.list_folder / "veri_test.txt");
  EXPECT_EQ(trials.trials.size(), NonEmptyLines(fs::ReadFile(corpus / "voxceleb1" / "veri_test.txt")));
  EXPECT_GT(trials.trials.size(), 0u);
  std::size_t targets = 0;
  for (const Trial& t : trials.trials) {
    EXPECT_EQ(d1.wav_scp.count(t.left), 1u) << t.left;
    EXPECT_EQ(d1.wav_scp.count(t.right), 1u) << t.right;
    EXPECT_TRUE(t.label == "1" || t.label == "0") << t.label;
    targets += t.label == "1";
  }
  EXPECT_EQ(2 * targets, trials.trials.size());

  // Decoding: a test WAV, a training m4a, a concatenated video.
  const audio::Audio wav = audio::Decode(d1.wav_scp.begin()->second);
  EXPECT_EQ(wav.source_sample_rate, 16000);
  EXPECT_GE(wav.Seconds(), 2.0);
  EXPECT_LE(wav.Seconds(), 8.0);
  const audio::Audio m4a = audio::Decode(d2.wav_scp.begin()->second);
  EXPECT_EQ(m4a.source_sample_rate, 16000);
  EXPECT_FALSE(m4a.resampled);
  EXPECT_GE(m4a.Seconds(), 1.9);
  EXPECT_LE(m4a.Seconds(), 8.2);
  const auto& [cat_id, cat_value] = *cat.wav_scp.begin();
  const audio::AudioSource source = audio::AudioSource::Parse(cat_value);
  ASSERT_EQ(source.kind, audio::AudioSource::Kind::kConcat);
  std::size_t parts_length = 0;
  const auto parts = audio::ReadConcatList(source.value);
  EXPECT_EQ(parts.size(), 2u);
  for (const auto& part : parts) parts_length += audio::DecodeFile(part).samples.size();
  const audio::Audio joined = audio::Decode(source);
  EXPECT_EQ(joined.samples.size(), parts_length) << cat_id;
  EXPECT_GE(joined.Seconds(), 3.8);

  // Re-running the generator with the same arguments changes nothing and says so.
  const std::string before = fs::ReadFile(corpus / ".demo_corpus.json");
  const audio::ProcessResult again = Generate(corpus);
  ASSERT_TRUE(again.ok()) << again.Describe();
  EXPECT_NE(again.output.find("up to date"), std::string::npos) << again.output;
  EXPECT_EQ(fs::ReadFile(corpus / ".demo_corpus.json"), before);
}

TEST_F(DemoCorpusTest, InterruptedRunIsCompleted) {
  TempDir dir("demo_resume");
  const auto corpus = dir / "corpus";
  ASSERT_TRUE(Generate(corpus).ok());
  const std::string trials = fs::ReadFile(corpus / "voxceleb1" / "veri_test.txt");
  // Simulate an interruption: the final marker is missing, a partial marker and some files are
  // left, one output file is gone.
  const std::string marker = fs::ReadFile(corpus / ".demo_corpus.json");
  std::filesystem::remove(corpus / ".demo_corpus.json");
  fs::WriteFileAtomic(corpus / ".demo_corpus.partial.json",
                      marker.substr(0, marker.find("\"summary\"")) + "\"x\": 0}\n");
  const DataDir before = [&] {
    PrepareVoxCeleb1(corpus / "voxceleb1", dir / "lists");
    return DataDir::Load(ListFolder(dir / "lists", "voxceleb1"));
  }();
  const std::filesystem::path removed = before.wav_scp.rbegin()->second;
  std::filesystem::remove(removed);
  std::filesystem::remove(corpus / "voxceleb1" / "veri_test.txt");

  const audio::ProcessResult resumed = Generate(corpus);
  ASSERT_TRUE(resumed.ok()) << resumed.Describe() << resumed.output;
  EXPECT_NE(resumed.output.find("completing an interrupted run"), std::string::npos) << resumed.output;
  EXPECT_TRUE(std::filesystem::exists(removed));
  EXPECT_EQ(fs::ReadFile(corpus / "voxceleb1" / "veri_test.txt"), trials);
  EXPECT_TRUE(std::filesystem::exists(corpus / ".demo_corpus.json"));
  EXPECT_FALSE(std::filesystem::exists(corpus / ".demo_corpus.partial.json"));
}

}  // namespace
}  // namespace asv::data

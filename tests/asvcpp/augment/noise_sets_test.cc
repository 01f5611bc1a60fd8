#include "asvcpp/augment/noise_sets.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "asvcpp/base/error.h"

namespace asv::augment {
namespace {

namespace stdfs = std::filesystem;

class NoiseSetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = stdfs::temp_directory_path() / ("asv_noise_sets_test_" + std::to_string(::getpid()));
    stdfs::remove_all(root_);
  }
  void TearDown() override { stdfs::remove_all(root_); }
  void Touch(const stdfs::path& p) {
    stdfs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  static std::string ErrorOf(const std::function<void()>& f) {
    try {
      f();
    } catch (const DataError& e) {
      return e.what();
    }
    return "no error";
  }
  stdfs::path root_;
};

TEST_F(NoiseSetsTest, MusanSetsHoldEveryWavUnderTheirFolderSortedById) {
  const stdfs::path musan = root_ / "musan";
  Touch(musan / "music/fma/music-fma-0001.wav");
  Touch(musan / "music/fma/music-fma-0000.wav");
  Touch(musan / "music/fma/ANNOTATIONS");
  Touch(musan / "music/jamendo/music-jamendo-0000.WAV");
  Touch(musan / "speech/librivox/speech-librivox-0000.wav");
  Touch(musan / "noise/free-sound/noise-free-sound-0000.wav");
  const MusanSets sets = ScanMusan(musan);
  ASSERT_EQ(sets.music.size(), 3u);
  EXPECT_EQ(sets.music[0].id, "music-fma-0000");
  EXPECT_EQ(sets.music[1].id, "music-fma-0001");
  EXPECT_EQ(sets.music[2].id, "music-jamendo-0000");
  EXPECT_EQ(sets.music[0].path, musan / "music/fma/music-fma-0000.wav");
  ASSERT_EQ(sets.speech.size(), 1u);
  ASSERT_EQ(sets.noise.size(), 1u);
  EXPECT_EQ(sets.noise[0].id, "noise-free-sound-0000");

  Touch(musan / "noise/sound-bible/noise-free-sound-0000.wav");
  EXPECT_NE(ErrorOf([&] { ScanMusan(musan); }).find("two MUSAN recordings named noise-free-sound-0000"),
            std::string::npos);
  stdfs::remove_all(musan / "speech");
  EXPECT_NE(ErrorOf([&] { ScanMusan(musan); }).find((musan / "speech").string() + ": MUSAN folder missing"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ScanMusan(root_ / "nowhere"); }).find("paths.musan_folder is not a folder"),
            std::string::npos);
}

TEST_F(NoiseSetsTest, RirListsResolveTheirPathsUnderTheRirsFolder) {
  const stdfs::path rirs = root_ / "data" / "RIRS_NOISES";
  const stdfs::path list = rirs / "simulated_rirs/smallroom/rir_list";
  stdfs::create_directories(list.parent_path());
  std::ofstream(list) << "--rir-id smallroom-Room001-00001 --room-id smallroom-Room001 "
                         "RIRS_NOISES/simulated_rirs/smallroom/Room001/Room001-00001.wav\n"
                         "\n"
                         "--rir-id r2 --room-id room2 --rt60 0.5 other/r2.wav\n"
                         "--rir-id r3 --room-id room2 /abs/r3.wav\n";
  const auto r = ReadRirList(list, rirs);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].id, "smallroom-Room001-00001");
  EXPECT_EQ(r[0].room_id, "smallroom-Room001");
  EXPECT_EQ(r[0].path, rirs / "simulated_rirs/smallroom/Room001/Room001-00001.wav");
  EXPECT_EQ(r[1].path, root_ / "data" / "other/r2.wav");
  EXPECT_EQ(r[2].path, stdfs::path("/abs/r3.wav"));

  std::ofstream(list) << "--rir-id a x.wav\n--room-id b y.wav\n";
  EXPECT_NE(ErrorOf([&] { ReadRirList(list, rirs); }).find(list.string() + ":2: no --rir-id"), std::string::npos);
  std::ofstream(list) << "--rir-id a --room-id\n";
  EXPECT_NE(ErrorOf([&] { ReadRirList(list, rirs); }).find(list.string() + ":1: option --room-id has no value"),
            std::string::npos);
  std::ofstream(list) << "";
  EXPECT_NE(ErrorOf([&] { ReadRirList(list, rirs); }).find("the RIR list is empty"), std::string::npos);

  // The recipe's two sets; a missing one is named with where to get the archive.
  std::ofstream(list) << "--rir-id s1 --room-id s x.wav\n";
  EXPECT_NE(ErrorOf([&] { SimulatedRoomRirs(rirs); }).find("mediumroom/rir_list: missing"), std::string::npos);
  const stdfs::path medium = rirs / "simulated_rirs/mediumroom/rir_list";
  stdfs::create_directories(medium.parent_path());
  std::ofstream(medium) << "--rir-id m1 --room-id m x.wav\n--rir-id m2 --room-id m y.wav\n";
  const auto sets = SimulatedRoomRirs(rirs);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].name, "smallroom");
  EXPECT_EQ(sets[1].rirs.size(), 2u);
  EXPECT_DOUBLE_EQ(sets[0].probability, 0.5);
}

}  // namespace
}  // namespace asv::augment

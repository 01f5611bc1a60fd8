// --sample-frequency from Kaldi-style MFCC option files.
#include "asvcpp/settings/mfcc_conf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "asvcpp/base/error.h"

namespace asv::settings {
namespace {

// ASVtorch's recipes/voxceleb/xvector/configs/mfcc.conf (reference section 4.1).
constexpr const char* kAsvtorchMfccConf =
    "--sample-frequency=16000\n"
    "--frame-length=25 # the default is 25\n"
    "--low-freq=20 # the default.\n"
    "--high-freq=7900 # the default is zero meaning use the Nyquist (4k in this case).\n"
    "--num-mel-bins=30\n"
    "--num-ceps=30\n"
    "--snip-edges=false\n";

TEST(SettingsMfccConf, ReadsAsvtorchFile) {
  EXPECT_EQ(ParseSampleFrequency(kAsvtorchMfccConf, "mfcc.conf"), 16000);
}

TEST(SettingsMfccConf, CommentsAreIgnoredAndTheLastOccurrenceWins) {
  EXPECT_EQ(ParseSampleFrequency("# --sample-frequency=44100\n--sample-frequency=8000  # telephone\n", "f"), 8000);
  EXPECT_EQ(ParseSampleFrequency("--sample-frequency=16000\n--num-ceps=30\n--sample_frequency=8000\n", "f"), 8000);
  EXPECT_EQ(ParseSampleFrequency("  --sample-frequency=16000.0\r\n", "f"), 16000);
  EXPECT_EQ(ParseSampleFrequency("--num-ceps=30\n\n", "f"), std::nullopt);
  EXPECT_EQ(ParseSampleFrequency("--sample-frequency-extra=1\n", "f"), std::nullopt);
}

TEST(SettingsMfccConf, BadValuesThrowConfigError) {
  try {
    ParseSampleFrequency("--num-ceps=30\n--sample-frequency=16k\n", "mfcc.conf");
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mfcc.conf:2: --sample-frequency='16k' is not a positive whole number of Hz"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseSampleFrequency("--sample-frequency=16000.5\n", "f"), ConfigError);
  EXPECT_THROW(ParseSampleFrequency("--sample-frequency=-8000\n", "f"), ConfigError);
  EXPECT_THROW(ParseSampleFrequency("--sample-frequency\n", "f"), ConfigError);
}

TEST(SettingsMfccConf, ReadsFilesAndReportsMissingOnes) {
  const std::string path = ::testing::TempDir() + "asv_settings_mfcc.conf";
  {
    std::ofstream out(path);
    out << kAsvtorchMfccConf;
  }
  EXPECT_EQ(ReadSampleFrequency(path), 16000);
  std::remove(path.c_str());
  EXPECT_THROW(ReadSampleFrequency(path), DataError);
}

}  // namespace
}  // namespace asv::settings

// build_info(): every field detected, and detected right: the compiler and C++ library it
// names must be the ones whose macros this very file sees (a hard-coded value would fail
// under the other preset). Run: ctest --preset unit -R BuildInfo
#include <gtest/gtest.h>

#include <string>
#include <version>

#include "diagnose/build_info.h"

namespace gufo::diagnose {
namespace {

TEST(BuildInfo, FieldsAreFilled) {
  const BuildInfo& build = build_info();
  EXPECT_FALSE(build.version.empty());
  EXPECT_FALSE(build.git_revision.empty());
  EXPECT_FALSE(build.build_type.empty());
  EXPECT_FALSE(build.preset.empty());
  EXPECT_FALSE(build.cxx_compiler_id.empty());
  EXPECT_FALSE(build.cxx_compiler_version.empty());
  EXPECT_FALSE(build.cxx_compiler_path.empty());
  EXPECT_FALSE(build.cxx_compiler_banner.empty());
  EXPECT_NE(build.cxx_compiler_banner, "unknown");
  EXPECT_FALSE(build.stdlib_name.empty());
  EXPECT_FALSE(build.stdlib_version.empty());
}

TEST(BuildInfo, CompilerMatchesTheCompilersOwnMacros) {
  const BuildInfo& build = build_info();
#if defined(__clang__)
  const std::string id = "Clang";
  const std::string version = std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
                              std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  const std::string id = "GNU";
  const std::string version =
      std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." + std::to_string(__GNUC_PATCHLEVEL__);
#else
  GTEST_SKIP() << "no known compiler macros to compare with";
  const std::string id, version;
#endif
  EXPECT_EQ(build.cxx_compiler_id, id);
  EXPECT_EQ(build.cxx_compiler_version, version);
  // The banner is what `<compiler> --version` printed; it names the same version.
  EXPECT_NE(std::string(build.cxx_compiler_banner).find(version), std::string::npos) << build.cxx_compiler_banner;
}

TEST(BuildInfo, StandardLibraryMatchesItsOwnMacros) {
  const BuildInfo& build = build_info();
#if defined(_LIBCPP_VERSION)
  EXPECT_EQ(build.stdlib_name, "libc++");
  EXPECT_EQ(build.stdlib_version, std::to_string(_LIBCPP_VERSION));
#elif defined(__GLIBCXX__)
  EXPECT_EQ(build.stdlib_name, "libstdc++");
  EXPECT_EQ(build.stdlib_version, std::to_string(_GLIBCXX_RELEASE) + " (" + std::to_string(__GLIBCXX__) + ")");
#endif
}

TEST(BuildInfo, CudaFieldsFollowTheBuild) {
  const BuildInfo& build = build_info();
#if defined(GUFO_HAVE_CUDA)
  ASSERT_TRUE(build.with_cuda);
  EXPECT_FALSE(build.nvcc_version.empty());
  EXPECT_FALSE(build.cuda_toolkit_version.empty());
  EXPECT_FALSE(build.cudart_header_version.empty());
  EXPECT_FALSE(build.cublas_header_version.empty());
  EXPECT_FALSE(build.cuda_host_compiler.empty());
  EXPECT_FALSE(build.cuda_architectures.empty());
  // CUDART_VERSION 13000 is toolkit 13.0: the header and the toolkit agree.
  const int cudart = std::stoi(std::string(build.cudart_header_version));
  const std::string major_minor = std::to_string(cudart / 1000) + "." + std::to_string(cudart % 1000 / 10);
  EXPECT_EQ(std::string(build.cuda_toolkit_version).rfind(major_minor, 0), 0u)
      << build.cuda_toolkit_version << " vs CUDART_VERSION " << cudart;
  EXPECT_NE(std::string(build.nvcc_banner).find(std::string(build.nvcc_version)), std::string::npos)
      << build.nvcc_banner;
#else
  EXPECT_FALSE(build.with_cuda);
  EXPECT_TRUE(build.nvcc_version.empty());
  EXPECT_TRUE(build.cuda_toolkit_version.empty());
  EXPECT_TRUE(build.cublas_header_version.empty());
#endif
}

}  // namespace
}  // namespace gufo::diagnose

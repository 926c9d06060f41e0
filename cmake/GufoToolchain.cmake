# Verifies that the C++ compiler is the one the preset asked for and that the C++ standard
# library headers it picked up belong to a matching toolchain, so two toolchains never mix.

string(REGEX MATCH "^[0-9]+" _gufo_found_major "${CMAKE_CXX_COMPILER_VERSION}")
if(GUFO_EXPECT_COMPILER)
  if(NOT GUFO_EXPECT_COMPILER MATCHES "^([A-Za-z]+)[ ;]([0-9]+)$")
    message(FATAL_ERROR "gufo: GUFO_EXPECT_COMPILER must be 'ID MAJOR' (e.g. 'GNU 12'), "
                        "got '${GUFO_EXPECT_COMPILER}'")
  endif()
  set(_gufo_expect_id "${CMAKE_MATCH_1}")
  set(_gufo_expect_major "${CMAKE_MATCH_2}")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL _gufo_expect_id OR NOT _gufo_found_major STREQUAL _gufo_expect_major)
    message(FATAL_ERROR
      "gufo: preset '${GUFO_PRESET}' needs a ${_gufo_expect_id} ${_gufo_expect_major} C++ compiler, "
      "but ${CMAKE_CXX_COMPILER} is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}. "
      "Run scripts/install-deps.sh, or unset CXX/CC, and use a fresh build folder.")
  endif()
endif()

# The standard library: which one, and its version, read from its own headers.
include(CheckCXXSourceRuns)
set(_gufo_stdlib_probe "${CMAKE_BINARY_DIR}/gufo_stdlib_probe.cpp")
file(WRITE "${_gufo_stdlib_probe}" [=[
#include <version>
#include <cstdio>
int main() {
#if defined(_LIBCPP_VERSION)
  std::printf("libc++;%d", _LIBCPP_VERSION);
#elif defined(__GLIBCXX__)
  std::printf("libstdc++;%d;%d", _GLIBCXX_RELEASE, __GLIBCXX__);
#else
  std::printf("unknown;0");
#endif
  return 0;
}
]=])
try_run(_gufo_probe_run _gufo_probe_compile
  "${CMAKE_BINARY_DIR}/gufo_stdlib_probe" "${_gufo_stdlib_probe}"
  CMAKE_FLAGS -DCMAKE_CXX_STANDARD=20
  RUN_OUTPUT_VARIABLE _gufo_stdlib_out)
if(NOT _gufo_probe_compile OR NOT _gufo_probe_run EQUAL 0)
  message(FATAL_ERROR "gufo: cannot compile and run a program with ${CMAKE_CXX_COMPILER}; "
                      "is its C++ standard library installed?")
endif()
list(GET _gufo_stdlib_out 0 GUFO_STDLIB_NAME)
if(GUFO_STDLIB_NAME STREQUAL "libstdc++")
  list(GET _gufo_stdlib_out 1 GUFO_STDLIB_RELEASE)
  list(GET _gufo_stdlib_out 2 GUFO_STDLIB_DATE)
  set(GUFO_STDLIB_VERSION "${GUFO_STDLIB_RELEASE} (${GUFO_STDLIB_DATE})")
  # NOTE(toolchain): g++ must use the libstdc++ of its own release; a mismatch means headers
  # from another GCC were found first (CPLUS_INCLUDE_PATH, a stray -isystem, ...).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT GUFO_STDLIB_RELEASE STREQUAL _gufo_found_major)
    message(FATAL_ERROR "gufo: ${CMAKE_CXX_COMPILER} is GCC ${CMAKE_CXX_COMPILER_VERSION} but found "
                        "the libstdc++ headers of GCC ${GUFO_STDLIB_RELEASE}; toolchains are mixed.")
  endif()
else()
  list(GET _gufo_stdlib_out 1 GUFO_STDLIB_VERSION)
endif()
message(STATUS "gufo: C++ compiler ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, "
               "standard library ${GUFO_STDLIB_NAME} ${GUFO_STDLIB_VERSION}")

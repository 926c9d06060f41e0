# Compiles C and C++ through ccache where it is installed (scripts/install-deps.sh installs it).
# Builds of the same compiler and flags share their objects: the cuda preset compiles the CPU
# engine exactly as the default preset does, and takes it from the cache (CI builds both).
option(GUFO_CCACHE "Compile C and C++ through ccache when it is installed" ON)
if(GUFO_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(GUFO_CCACHE_PROGRAM ccache)
  if(GUFO_CCACHE_PROGRAM)
    # NOTE(ccache): paths under the source tree are hashed relative to the build folder and the
    # folder itself is left out of the hash, so build/default and build/cuda (the same depth)
    # hit each other's objects; an object's debug info then names the folder that compiled it.
    set(_gufo_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                       ${GUFO_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${_gufo_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_gufo_launcher})
  endif()
endif()

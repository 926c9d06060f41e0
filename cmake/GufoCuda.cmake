# Finds the CUDA compiler and toolkit for the `cuda` preset without mixing installations.
#
# Search order for nvcc (the first hit wins; a system-wide install is the last resort):
#   1. CMAKE_CUDA_COMPILER given by the preset or -D
#   2. the CUDACXX environment variable
#   3. nvcc on PATH
#   4. $CUDA_HOME/bin, then $CUDA_PATH/bin
#   5. /usr/local/cuda/bin
# The toolkit (headers, cudart, cuBLAS) is then taken from nvcc's own installation, and
# configure fails if any part of it reports a version other than nvcc's.

if(NOT CMAKE_CUDA_COMPILER)
  if(DEFINED ENV{CUDACXX} AND NOT "$ENV{CUDACXX}" STREQUAL "")
    set(_gufo_nvcc "$ENV{CUDACXX}")
    set(_gufo_nvcc_from "CUDACXX")
  else()
    find_program(_gufo_nvcc_path nvcc)
    if(_gufo_nvcc_path)
      set(_gufo_nvcc "${_gufo_nvcc_path}")
      set(_gufo_nvcc_from "PATH")
    else()
      find_program(_gufo_nvcc_home nvcc
        PATHS "$ENV{CUDA_HOME}/bin" "$ENV{CUDA_PATH}/bin" NO_DEFAULT_PATH)
      if(_gufo_nvcc_home)
        set(_gufo_nvcc "${_gufo_nvcc_home}")
        set(_gufo_nvcc_from "CUDA_HOME/CUDA_PATH")
      else()
        find_program(_gufo_nvcc_system nvcc PATHS /usr/local/cuda/bin NO_DEFAULT_PATH)
        set(_gufo_nvcc "${_gufo_nvcc_system}")
        set(_gufo_nvcc_from "/usr/local/cuda (system-wide fallback)")
      endif()
    endif()
  endif()
  if(NOT _gufo_nvcc OR NOT EXISTS "${_gufo_nvcc}")
    message(FATAL_ERROR "gufo: preset '${GUFO_PRESET}' needs nvcc (CUDA 13), found none: set "
                        "CUDACXX, put nvcc on PATH, or set CUDA_HOME.")
  endif()
  set(CMAKE_CUDA_COMPILER "${_gufo_nvcc}" CACHE FILEPATH "CUDA compiler (found by GufoCuda.cmake)")
  message(STATUS "gufo: nvcc from ${_gufo_nvcc_from}: ${CMAKE_CUDA_COMPILER}")
endif()

# nvcc compiles host code with the very same C++ compiler as the rest of the build.
if(NOT CMAKE_CUDA_HOST_COMPILER)
  set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}" CACHE FILEPATH "Host compiler for nvcc")
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # NOTE(cuda): sm_90a (H200/H100) is the target GPU; 'a' enables wgmma/TMA instructions.
  set(CMAKE_CUDA_ARCHITECTURES 90a-real CACHE STRING "CUDA architectures")
endif()
# NOTE(cuda): CMake 3.25 knows no CUDA20 dialect for nvcc, so CMAKE_CUDA_STANDARD is left
# unset and src/backend/cuda passes -std=c++20 itself. The runtime is linked shared, once.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)

# NOTE(cuda): nvcc on PATH may be a wrapper script (e.g. /usr/local/bin/nvcc running
# /usr/local/cuda-13.0/bin/nvcc), so its own path does not say where its installation is.
# CMake asks nvcc itself (`nvcc -v` prints TOP=...) and records it as the toolkit root.
if(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT)
  get_filename_component(_gufo_cuda_root "${CMAKE_CUDA_COMPILER_TOOLKIT_ROOT}" REALPATH)
else()
  get_filename_component(_gufo_nvcc_real "${CMAKE_CUDA_COMPILER}" REALPATH)
  get_filename_component(_gufo_cuda_root "${_gufo_nvcc_real}/../.." REALPATH)
endif()
set(_gufo_cuda_bin "${_gufo_cuda_root}/bin")
set(CUDAToolkit_ROOT "${_gufo_cuda_root}")
find_package(CUDAToolkit REQUIRED)

# 1. The toolkit CMake found must be nvcc's own.
get_filename_component(_gufo_tk_bin "${CUDAToolkit_BIN_DIR}" REALPATH)
if(NOT _gufo_tk_bin STREQUAL _gufo_cuda_bin)
  message(FATAL_ERROR "gufo: nvcc (${CMAKE_CUDA_COMPILER}) belongs to ${_gufo_cuda_root} but the CUDA toolkit was found in "
                      "${CUDAToolkit_BIN_DIR}; toolchains are mixed.")
endif()

# 2. nvcc, the runtime headers and cuBLAS must be one release.
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _gufo_nvcc_mm "${CMAKE_CUDA_COMPILER_VERSION}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" _gufo_tk_mm "${CUDAToolkit_VERSION}")
if(NOT _gufo_nvcc_mm STREQUAL _gufo_tk_mm)
  message(FATAL_ERROR "gufo: nvcc is CUDA ${CMAKE_CUDA_COMPILER_VERSION} but the toolkit in "
                      "${CUDAToolkit_TARGET_DIR} is ${CUDAToolkit_VERSION}; toolchains are mixed.")
endif()

find_file(_gufo_cudart_h cuda_runtime_api.h PATHS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
find_file(_gufo_cublas_h cublas_api.h PATHS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(NOT _gufo_cudart_h OR NOT _gufo_cublas_h)
  message(FATAL_ERROR "gufo: cuda_runtime_api.h or cublas_api.h missing from ${CUDAToolkit_INCLUDE_DIRS}")
endif()
file(STRINGS "${_gufo_cudart_h}" _gufo_cudart_line REGEX "#define CUDART_VERSION +[0-9]+")
string(REGEX MATCH "[0-9]+$" GUFO_CUDART_HEADER_VERSION "${_gufo_cudart_line}")
math(EXPR _gufo_cudart_major "${GUFO_CUDART_HEADER_VERSION} / 1000")
math(EXPR _gufo_cudart_minor "(${GUFO_CUDART_HEADER_VERSION} % 1000) / 10")
if(NOT "${_gufo_cudart_major}.${_gufo_cudart_minor}" STREQUAL _gufo_nvcc_mm)
  message(FATAL_ERROR "gufo: nvcc is CUDA ${_gufo_nvcc_mm} but ${_gufo_cudart_h} is "
                      "${_gufo_cudart_major}.${_gufo_cudart_minor}; toolchains are mixed.")
endif()

foreach(_part MAJOR MINOR PATCH)
  file(STRINGS "${_gufo_cublas_h}" _line REGEX "#define CUBLAS_VER_${_part} +[0-9]+")
  string(REGEX MATCH "[0-9]+$" _gufo_cublas_${_part} "${_line}")
endforeach()
set(GUFO_CUBLAS_HEADER_VERSION "${_gufo_cublas_MAJOR}.${_gufo_cublas_MINOR}.${_gufo_cublas_PATCH}")
string(REGEX MATCH "^[0-9]+" _gufo_nvcc_major "${CMAKE_CUDA_COMPILER_VERSION}")
# NOTE(cuda): cuBLAS has its own minor numbering (CUDA 13.0 ships cuBLAS 13.1), but its
# major always equals the toolkit's.
if(NOT _gufo_cublas_MAJOR STREQUAL _gufo_nvcc_major)
  message(FATAL_ERROR "gufo: nvcc is CUDA ${CMAKE_CUDA_COMPILER_VERSION} but ${_gufo_cublas_h} is "
                      "cuBLAS ${GUFO_CUBLAS_HEADER_VERSION}; toolchains are mixed.")
endif()

# 3. The libraries we link come from the same installation.
foreach(_lib cudart cublas cublasLt)
  get_target_property(_loc CUDA::${_lib} IMPORTED_LOCATION)
  get_filename_component(_loc_real "${_loc}" REALPATH)
  get_filename_component(_root_real "${CUDAToolkit_LIBRARY_ROOT}" REALPATH)
  string(FIND "${_loc_real}" "${_root_real}" _pos)
  if(NOT _pos EQUAL 0)
    message(FATAL_ERROR "gufo: CUDA::${_lib} is ${_loc_real}, outside the toolkit ${_root_real}; "
                        "toolchains are mixed.")
  endif()
endforeach()

message(STATUS "gufo: CUDA ${CMAKE_CUDA_COMPILER_VERSION} (${_gufo_cuda_root}), cuBLAS "
               "${GUFO_CUBLAS_HEADER_VERSION}, host compiler ${CMAKE_CUDA_HOST_COMPILER}")

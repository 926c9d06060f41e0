# Warning flags shared by every Gufo target (interface library gufo_warnings; gufo_core links it
# publicly, so everything that uses the core gets them).
# NOTE(warnings): GUFO_WERROR turns every C++ warning into an error. The presets default and
# clang set it (asan and cuda inherit it): both compilers build the tree with no warning, and a new one
# fails the build that brought it. Fix a warning rather than silence it; where silencing is the
# only way, a comment says why.
option(GUFO_WERROR "Treat C++ compiler warnings as errors" OFF)
add_library(gufo_warnings INTERFACE)
target_compile_options(gufo_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wnon-virtual-dtor -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GUFO_WERROR}>>:-Werror>)

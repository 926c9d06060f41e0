# Warning flags shared by every Gufo target (interface library gufo_warnings).
add_library(gufo_warnings INTERFACE)
target_compile_options(gufo_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wnon-virtual-dtor -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>)

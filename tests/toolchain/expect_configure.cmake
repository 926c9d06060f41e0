# Runs a fresh configure of the Gufo source tree that must FAIL with a given message, or,
# with -DMUST_SUCCEED=ON, succeed and print it.
# cmake -DSOURCE_DIR=... -DWORK_DIR=... -DEXPECT=regex -DARG0=-DX=1 -DARG1=... -P this_file
set(ARGS "")
foreach(index RANGE 0 9)
  if(DEFINED ARG${index})
    list(APPEND ARGS "${ARG${index}}")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G Ninja -DGUFO_TESTS=OFF ${ARGS}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
file(REMOVE_RECURSE "${WORK_DIR}")
if(MUST_SUCCEED)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "configure failed but had to succeed with /${EXPECT}/:\n${output}")
  endif()
elseif(result EQUAL 0)
  message(FATAL_ERROR "configure succeeded but had to fail with /${EXPECT}/:\n${output}")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "configure ended without /${EXPECT}/:\n${output}")
endif()
message(STATUS "configure ended as expected: /${EXPECT}/")

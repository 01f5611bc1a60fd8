# Helpers shared by every folder: warnings, library targets and labelled tests.

add_library(asv_warnings INTERFACE)
target_compile_options(asv_warnings INTERFACE -Wall -Wextra -Wpedantic $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
                                              $<$<BOOL:${ASV_WERROR}>:-Werror>)

# asv_add_library(NAME SOURCES ... [DEPS ...]): one target per folder, include paths from the root;
# its sources are compiled in batches (cmake/AsvUnity.cmake) unless ASV_UNITY_BUILD is OFF.
function(asv_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE asv_warnings)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  asv_unity_candidate(${name})
endfunction()

# asv_add_test(NAME SOURCES ... DEPS ... LABELS ... [TIMEOUT s] [COST n] [PROPERTIES ...]): one
# GoogleTest executable whose tests are registered individually with ctest and carry the given
# labels (unit, golden, e2e, dist, gpu). The build's paths come from tests/build_paths.h. COST
# makes ctest start the program's tests early when it has no timings of an earlier run (a fresh
# build folder): give the slowest programs a high one so that they do not start last. PROPERTIES
# are more ctest properties of every test of the program (e.g. FIXTURES_REQUIRED tiny_corpus).
# The sources are compiled in batches (cmake/AsvUnity.cmake) unless ASV_UNITY_BUILD is OFF.
function(asv_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;COST" "SOURCES;DEPS;LABELS;PROPERTIES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_COST)
    set(ARG_COST 0)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} asv_test_paths GTest::gtest GTest::gtest_main asv_warnings)
  asv_unity_candidate(${name})
  # The labels are set by a file of their own that ctest reads after the discovered tests: in
  # gtest_discover_tests' PROPERTIES a second label would be read as a property name and shift
  # every property after it (TIMEOUT, COST, FIXTURES_REQUIRED and RUN_SERIAL would be lost).
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} COST ${ARG_COST} ${ARG_PROPERTIES}
    DISCOVERY_TIMEOUT 60)
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
  file(WRITE "${labels_file}"
    "foreach(asv_test IN LISTS ${name}_TESTS)\n"
    "  set_tests_properties(\"\${asv_test}\" PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
endfunction()

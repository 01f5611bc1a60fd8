# Helpers shared by every folder: warnings, library targets and labelled tests.

add_library(asv_warnings INTERFACE)
target_compile_options(asv_warnings INTERFACE -Wall -Wextra -Wpedantic $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
                                              $<$<BOOL:${ASV_WERROR}>:-Werror>)

# asv_add_library(NAME SOURCES ... [DEPS ...]): one target per folder, include paths from the root.
function(asv_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE asv_warnings)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# asv_add_test(NAME SOURCES ... DEPS ... LABELS ... [TIMEOUT s]): one GoogleTest executable whose
# tests are registered individually with ctest and carry the given labels
# (unit, golden, e2e, dist, gpu).
function(asv_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main asv_warnings)
  target_compile_definitions(${name} PRIVATE
    ASV_SOURCE_DIR="${PROJECT_SOURCE_DIR}" ASV_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()

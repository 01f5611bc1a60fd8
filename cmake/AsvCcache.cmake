# A compiler cache for every C and C++ compile of every build folder (the CPU build, the sanitizer
# and fuzzing builds, the CUDA build): ccache, when it is installed (tools/setup.sh installs it).
#
# Paths are hashed relative to the repository root (CCACHE_BASEDIR) and the build folder is not
# hashed (CCACHE_NOHASHDIR), so a fresh clone in another folder finds the objects that an earlier
# build filled in; objects compiled with debug information may then name the other clone's
# folder. The precompiled LibTorch header (cmake/AsvPch.cmake) is cached too and needs ccache's
# "pch_defines,time_macros" sloppiness, and "include_file_mtime,include_file_ctime" because the
# header is newer than the compiles that use it (ccache's manual, section "Precompiled headers").
# The cache itself is ccache's own (~/.cache/ccache unless CCACHE_DIR says otherwise).
#
#   -DASV_CCACHE=AUTO (default): use ccache when found; ON: require it; OFF: never.
# A CMAKE_<LANG>_COMPILER_LAUNCHER given on the command line replaces this one.

set(ASV_CCACHE AUTO CACHE STRING "Compile through ccache: AUTO (when found), ON (required) or OFF")
set_property(CACHE ASV_CCACHE PROPERTY STRINGS AUTO ON OFF)
if(NOT ASV_CCACHE MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ASV_CCACHE must be AUTO, ON or OFF, not '${ASV_CCACHE}'")
endif()

set(ASV_CCACHE_USED OFF)
if(NOT ASV_CCACHE STREQUAL "OFF" AND NOT CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_C_COMPILER_LAUNCHER)
  find_program(ASV_CCACHE_PROGRAM ccache)
  if(ASV_CCACHE_PROGRAM)
    set(_asv_launcher
        ${CMAKE_COMMAND} -E env
        "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}"
        "CCACHE_NOHASHDIR=true"
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        "${ASV_CCACHE_PROGRAM}")
    set(CMAKE_C_COMPILER_LAUNCHER ${_asv_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_asv_launcher})
    set(ASV_CCACHE_USED ON)
  elseif(ASV_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "ASV_CCACHE=ON but ccache was not found (Debian: apt-get install ccache)")
  endif()
endif()

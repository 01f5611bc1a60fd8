# Finds every external dependency; nothing is vendored. See tools/setup.sh for the packages.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(pegtl REQUIRED)
find_package(SQLite3 3.35 REQUIRED)  # AS MATERIALIZED in the best-per-config query
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(yaml-cpp REQUIRED)  # WeSpeaker's config.yaml (asvcpp/models; libyaml-cpp-dev)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)  # SHA-256 checksums of artifacts (libssl-dev)
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
# libpq, the PostgreSQL client library of the shared experiment store (asvcpp/db, Debian libpq-dev).
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
pkg_check_modules(SOXR REQUIRED IMPORTED_TARGET soxr)
pkg_check_modules(CAIRO REQUIRED IMPORTED_TARGET cairo)
# FFmpeg's libraries decode m4a/AAC and other formats libsndfile lacks, in process (Debian:
# libavformat-dev libavcodec-dev libavutil-dev; FFmpeg 4.4 or later). ASV_WITH_LIBAV: ON requires
# them, OFF builds without them, AUTO (default) uses them when found. Without them, reading an
# m4a (or any file only FFmpeg reads) is an error that names the file and the missing support.
set(ASV_WITH_LIBAV AUTO CACHE STRING "Decode m4a etc. with FFmpeg's libraries: ON, OFF or AUTO")
set_property(CACHE ASV_WITH_LIBAV PROPERTY STRINGS ON OFF AUTO)
if(ASV_WITH_LIBAV STREQUAL "ON")
  pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil)
elseif(ASV_WITH_LIBAV STREQUAL "AUTO")
  pkg_check_modules(LIBAV IMPORTED_TARGET libavformat libavcodec libavutil)
elseif(NOT ASV_WITH_LIBAV STREQUAL "OFF")
  message(FATAL_ERROR "ASV_WITH_LIBAV must be ON, OFF or AUTO, not '${ASV_WITH_LIBAV}'")
endif()
if(LIBAV_FOUND AND NOT ASV_WITH_LIBAV STREQUAL "OFF")
  set(ASV_HAVE_LIBAV ON)
else()
  set(ASV_HAVE_LIBAV OFF)
endif()
if(ASV_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# LibTorch: Debian's libtorch-dev (CPU, Gloo) by default; a CUDA build (for example the PyPI
# wheel, see tools/build_cuda.sh) or a user's own LibTorch through CMAKE_PREFIX_PATH.
find_package(Torch REQUIRED)

# TorchConfig's find_library() searches the system folders before the LibTorch tree, so a system
# LibTorch (Debian's) can shadow the one asked for. Refuse such a mixed build.
if(TARGET torch_cpu)
  get_target_property(_asv_torch_cpu torch_cpu IMPORTED_LOCATION)
  if(NOT _asv_torch_cpu)
    get_target_property(_asv_configs torch_cpu IMPORTED_CONFIGURATIONS)
    list(GET _asv_configs 0 _asv_config)
    get_target_property(_asv_torch_cpu torch_cpu IMPORTED_LOCATION_${_asv_config})
  endif()
  get_filename_component(_asv_expected_dir "${_asv_torch_cpu}" DIRECTORY)
  get_filename_component(_asv_found_dir "${TORCH_LIBRARY}" DIRECTORY)
  get_filename_component(_asv_expected_dir "${_asv_expected_dir}" REALPATH)
  get_filename_component(_asv_found_dir "${_asv_found_dir}" REALPATH)
  if(NOT _asv_expected_dir STREQUAL _asv_found_dir)
    message(FATAL_ERROR
      "LibTorch targets come from ${_asv_expected_dir} but libtorch was found in ${_asv_found_dir}. "
      "Put the LibTorch root (the folder holding lib/ and include/) first in CMAKE_PREFIX_PATH, "
      "e.g. -DCMAKE_PREFIX_PATH=\"/path/to/torch;/path/to/torch/share/cmake\".")
  endif()
endif()

set(ASV_WITH_CUDA OFF)
set(ASV_WITH_NCCL OFF)
if(TARGET torch_cuda)
  set(ASV_WITH_CUDA ON)
  find_package(CUDAToolkit REQUIRED)
  find_path(ASV_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CPATH)
  if(ASV_NCCL_INCLUDE_DIR)
    set(ASV_WITH_NCCL ON)
  endif()
endif()

# Gloo (CPU data parallelism) needs headers matching the LibTorch build: look only next to
# LibTorch's own headers (Debian: /usr/include with libgloo-dev). The pip wheels ship none.
find_path(ASV_GLOO_INCLUDE_DIR gloo/config.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(ASV_GLOO_INCLUDE_DIR)
  set(ASV_WITH_GLOO ON)
else()
  set(ASV_WITH_GLOO OFF)
endif()

# The PyPI CUDA wheels keep cuDNN, NCCL, cuBLAS ... in sibling nvidia/*/lib folders that
# libtorch_cuda finds through its own RPATH. The linker needs them too (-rpath-link), and our
# executables get an RPATH to LibTorch so they run without LD_LIBRARY_PATH.
set(ASV_TORCH_RPATH "")
if(TARGET torch_cpu)
  set(ASV_TORCH_RPATH "${_asv_expected_dir}")
endif()
if(ASV_WITH_CUDA)
  file(GLOB _asv_nvidia_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(_dir IN LISTS _asv_nvidia_lib_dirs)
    add_link_options("LINKER:-rpath-link,${_dir}")
  endforeach()
endif()

# The PyPI wheels ship their own (newer) fmt headers in LibTorch's include folder. Every target
# that links LibTorch would compile against them while linking the fmt found above. Put the
# headers of the fmt we link first (a build-tree folder whose only entry links to them), in front
# of LibTorch's own include folders: only targets that link LibTorch see it, so the others compile
# exactly as in a build against another LibTorch (compiler-cache hits, cmake/AsvCcache.cmake).
get_target_property(_asv_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
list(GET _asv_fmt_include 0 _asv_fmt_include)
foreach(_dir IN LISTS TORCH_INCLUDE_DIRS)
  if(EXISTS "${_dir}/fmt/format.h" AND NOT _dir STREQUAL _asv_fmt_include)
    set(_asv_first "${PROJECT_BINARY_DIR}/include-first")
    file(MAKE_DIRECTORY "${_asv_first}")
    file(CREATE_LINK "${_asv_fmt_include}/fmt" "${_asv_first}/fmt" SYMBOLIC)
    foreach(_lib IN LISTS TORCH_LIBRARIES)
      if(TARGET ${_lib})
        get_target_property(_asv_lib_includes ${_lib} INTERFACE_INCLUDE_DIRECTORIES)
        if(_asv_lib_includes)
          list(PREPEND _asv_lib_includes "${_asv_first}")
          set_target_properties(${_lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_asv_lib_includes}")
        endif()
      endif()
    endforeach()
    message(STATUS "LibTorch bundles fmt headers in ${_dir}; using ${_asv_fmt_include}/fmt instead")
    break()
  endif()
endforeach()

# The PyPI wheels' libtorch.so exports its own copy of std::filesystem (64 symbols). Executables
# list libtorch before libstdc++, so the dynamic linker would bind our std::filesystem calls to
# that copy, which crashes (seen with remove_all). Make libstdc++ the first library every
# binary needs, so its definitions win.
# The shared libstdc++ is named by its full path: a GCC whose own library folder holds only
# libstdc++.a (seen: a relocated GCC 13 under /opt/gcc) would otherwise resolve -lstdc++ to the
# archive, and the executables' std::filesystem calls would bind to LibTorch's copy after all.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE _asv_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${_asv_libstdcxx}" AND EXISTS "${_asv_libstdcxx}")
    get_filename_component(_asv_libstdcxx "${_asv_libstdcxx}" REALPATH)
    add_link_options("LINKER:--push-state,--no-as-needed" "${_asv_libstdcxx}" "LINKER:--pop-state")
  else()
    add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
  endif()
endif()

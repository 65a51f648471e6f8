# Dependencies are found, never vendored. OpenBLAS must be OpenBLAS: Debian also
# ships netlib's reference BLAS under the same libblas.so name, which is ten times
# slower, so we look for libopenblas by name and fail loudly if it is absent.
find_package(Threads REQUIRED)

set(BLA_VENDOR OpenBLAS)
find_library(NNC_OPENBLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-pthread openblas-openmp)
find_path(NNC_OPENBLAS_INCLUDE_DIR NAMES cblas.h
  PATH_SUFFIXES openblas-pthread openblas openblas-openmp x86_64-linux-gnu/openblas-pthread
  NO_DEFAULT_PATH PATHS /usr/include /usr/include/x86_64-linux-gnu /usr/local/include)
if(NOT NNC_OPENBLAS_LIBRARY OR NOT NNC_OPENBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "OpenBLAS not found (install libopenblas-dev). NNC refuses to fall back to the reference BLAS.")
endif()
add_library(nnc::openblas INTERFACE IMPORTED)
set_target_properties(nnc::openblas PROPERTIES
  INTERFACE_LINK_LIBRARIES "${NNC_OPENBLAS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NNC_OPENBLAS_INCLUDE_DIR}")
message(STATUS "OpenBLAS: ${NNC_OPENBLAS_LIBRARY} (cblas.h in ${NNC_OPENBLAS_INCLUDE_DIR})")

find_package(SQLite3 REQUIRED)
# Image decoding for the dataframe (ccv_cnnp_dataframe_read_image).
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)

find_library(NNC_PTHREADPOOL_LIBRARY NAMES pthreadpool REQUIRED)
find_path(NNC_PTHREADPOOL_INCLUDE_DIR NAMES pthreadpool.h REQUIRED)
add_library(nnc::pthreadpool INTERFACE IMPORTED)
set_target_properties(nnc::pthreadpool PROPERTIES
  INTERFACE_LINK_LIBRARIES "${NNC_PTHREADPOOL_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NNC_PTHREADPOOL_INCLUDE_DIR}")

find_library(NNC_CPUINFO_LIBRARY NAMES cpuinfo REQUIRED)
find_path(NNC_CPUINFO_INCLUDE_DIR NAMES cpuinfo.h REQUIRED)
add_library(nnc::cpuinfo INTERFACE IMPORTED)
set_target_properties(nnc::cpuinfo PROPERTIES
  INTERFACE_LINK_LIBRARIES "${NNC_CPUINFO_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NNC_CPUINFO_INCLUDE_DIR}")

find_path(NNC_FP16_INCLUDE_DIR NAMES fp16.h REQUIRED)

if(NNC_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(NNC_BUILD_TOOLS)
  find_package(benchmark QUIET)
endif()

find_library(NNC_XXHASH_LIBRARY NAMES xxhash REQUIRED)
find_path(NNC_XXHASH_INCLUDE_DIR NAMES xxhash.h REQUIRED)
add_library(nnc::xxhash INTERFACE IMPORTED)
set_target_properties(nnc::xxhash PROPERTIES
  INTERFACE_LINK_LIBRARIES "${NNC_XXHASH_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NNC_XXHASH_INCLUDE_DIR}")

# Open MPI (libopenmpi-dev) for the communicator of lib/cmd/comm: found (AUTO)
# or required (ON). Without it the communicator calls refuse with a message.
set(NNC_HAVE_MPI OFF)
if(NOT NNC_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(NNC_HAVE_MPI ON)
    set(NNC_PC_MPI "${MPI_C_LIBRARIES}")
    message(STATUS "MPI: ${MPI_C_LIBRARIES} (MPI ${MPI_C_VERSION})")
  elseif(NNC_MPI STREQUAL "ON")
    message(FATAL_ERROR "NNC_MPI=ON but no MPI was found (install libopenmpi-dev)")
  else()
    message(STATUS "MPI: not found; building without the communicator (install libopenmpi-dev)")
  endif()
endif()

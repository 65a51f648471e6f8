# Every optional part of NNC is one option here, set through one helper so that
# the summary at the end of configuration lists them all.
set(NNC_OPTION_NAMES "")
function(nnc_option name doc default)
  if(NOT DEFINED ${name})
    set(${name} ${default} CACHE STRING "${doc}")
  endif()
  set(NNC_OPTION_NAMES ${NNC_OPTION_NAMES} ${name} PARENT_SCOPE)
endfunction()

nnc_option(NNC_BUILD_TESTS "Build the test suites" ON)
nnc_option(NNC_BUILD_TOOLS "Build the tools and benchmarks" ON)
nnc_option(NNC_SANITIZE "Build with address and undefined-behaviour sanitizers" OFF)
nnc_option(NNC_CUDA "Build the CUDA backends (ON, OFF or AUTO)" AUTO)
nnc_option(NNC_MPI "Build the MPI communicator for data parallelism across processes (ON, OFF or AUTO)" AUTO)
nnc_option(NNC_BENCH_TORCH "Build the libtorch peer in benchmarks (ON, OFF or AUTO)" AUTO)
nnc_option(NNC_CUDA_STATIC_RUNTIME "Link the CUDA runtime statically (for programs carried to another GPU machine)" OFF)

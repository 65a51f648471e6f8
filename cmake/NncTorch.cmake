# The PyTorch peer for benchmarks (Debian's libtorch-dev). Benchmarks only:
# libnnc never links it. nnc_use_torch(target) links the peer into a benchmark
# and defines NNC_HAVE_TORCH=1 when it is found (and NNC_BENCH_TORCH is not OFF);
# otherwise the benchmark builds without it and says so when run.
if(NOT NNC_BENCH_TORCH STREQUAL "OFF" AND NOT DEFINED NNC_TORCH_FOUND)
  find_library(NNC_TORCH_LIBRARY torch)
  find_library(NNC_TORCH_CPU_LIBRARY torch_cpu)
  find_library(NNC_C10_LIBRARY c10)
  find_path(NNC_TORCH_INCLUDE_DIR torch/torch.h PATH_SUFFIXES torch/csrc/api/include)
  find_path(NNC_ATEN_INCLUDE_DIR ATen/ATen.h)
  if(NNC_TORCH_LIBRARY AND NNC_TORCH_CPU_LIBRARY AND NNC_C10_LIBRARY AND NNC_TORCH_INCLUDE_DIR AND NNC_ATEN_INCLUDE_DIR)
    set(NNC_TORCH_FOUND ON CACHE INTERNAL "")
    message(STATUS "libtorch (benchmark peer): ${NNC_TORCH_CPU_LIBRARY}")
  else()
    set(NNC_TORCH_FOUND OFF CACHE INTERNAL "")
    message(STATUS "libtorch not found: benchmarks run without the PyTorch peer (tools/install-deps --bench)")
  endif()
endif()

function(nnc_use_torch target)
  if(NNC_TORCH_FOUND AND NOT NNC_BENCH_TORCH STREQUAL "OFF")
    target_include_directories(${target} SYSTEM PRIVATE ${NNC_ATEN_INCLUDE_DIR} ${NNC_TORCH_INCLUDE_DIR})
    target_link_libraries(${target} PRIVATE ${NNC_TORCH_LIBRARY} ${NNC_TORCH_CPU_LIBRARY} ${NNC_C10_LIBRARY})
    target_compile_definitions(${target} PRIVATE NNC_HAVE_TORCH=1)
  endif()
endfunction()

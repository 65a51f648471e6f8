# NCCL for the GPU_NCCL backend (cuda/nccl.cpp): COMM_ALLREDUCE / BROADCAST /
# REDUCE across the GPUs of one process. Found like cuDNN (cuda/cudnn.cmake):
# CMAKE_PREFIX_PATH, then the Python package nvidia.nccl of the python3 on
# PATH. Without NCCL the module builds without the backend and says so.
set(_nnc_nccl_hints "")
find_program(NNC_NCCL_PYTHON NAMES python3)
if(NNC_NCCL_PYTHON)
  execute_process(COMMAND ${NNC_NCCL_PYTHON} -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _nnc_nccl_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nnc_nccl_py_rc)
  if(_nnc_nccl_py_rc EQUAL 0 AND _nnc_nccl_py)
    list(APPEND _nnc_nccl_hints ${_nnc_nccl_py})
  endif()
endif()
find_path(NNC_NCCL_INCLUDE_DIR nccl.h HINTS ${_nnc_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NNC_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nnc_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
if(NNC_NCCL_INCLUDE_DIR AND NNC_NCCL_LIBRARY)
  message(STATUS "NCCL: ${NNC_NCCL_LIBRARY} (headers ${NNC_NCCL_INCLUDE_DIR}); GPU_NCCL backend built")
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl.cpp)
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_across.cpp)  # across processes (lib/cmd/comm/gpu_across.hpp)
  target_include_directories(nnc_cuda PRIVATE ${NNC_NCCL_INCLUDE_DIR})
  set_property(GLOBAL APPEND PROPERTY NNC_CUDA_LINK_LIBRARIES ${NNC_NCCL_LIBRARY})
else()
  message(STATUS "NCCL: not found (nccl.h / libnccl; set CMAKE_PREFIX_PATH to its folder); building without the GPU_NCCL backend")
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_none.cpp)
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_across_none.cpp)
endif()

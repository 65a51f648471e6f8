# cuDNN for the GPU_CUDNN backends (cuda/cudnn.cpp). Found through
# CMAKE_PREFIX_PATH (tools/cuda-toolkit --flags puts the nvidia-cudnn wheel's
# folder there) or, failing that, through the Python package nvidia.cudnn of
# the python3 on PATH (the lent GPU machine keeps cuDNN there). The wheels
# ship libcudnn.so.9 without the unversioned link, hence both names. Without
# cuDNN the module builds with no GPU_CUDNN backend (cudnn_none.cpp) and says so.
set(_nnc_cudnn_hints "")
find_program(NNC_CUDNN_PYTHON NAMES python3)  # -DNNC_CUDNN_PYTHON=... picks another
if(NNC_CUDNN_PYTHON)
  # (nvidia.cudnn is a namespace package in the cu13 wheels: no __file__, so its __path__.)
  execute_process(COMMAND ${NNC_CUDNN_PYTHON} -c "import nvidia.cudnn as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _nnc_cudnn_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nnc_cudnn_py_rc)
  if(_nnc_cudnn_py_rc EQUAL 0 AND _nnc_cudnn_py)
    list(APPEND _nnc_cudnn_hints ${_nnc_cudnn_py})
  endif()
endif()
find_path(NNC_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_nnc_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NNC_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${_nnc_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
if(NNC_CUDNN_INCLUDE_DIR AND NNC_CUDNN_LIBRARY)
  message(STATUS "cuDNN: ${NNC_CUDNN_LIBRARY} (headers ${NNC_CUDNN_INCLUDE_DIR}); GPU_CUDNN backends built")
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cudnn.cpp)
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cudnn_graph.cpp)  # the convolutions through the graph API
  target_include_directories(nnc_cuda PRIVATE ${NNC_CUDNN_INCLUDE_DIR})
  target_compile_definitions(nnc_cuda PRIVATE NNC_HAVE_CUDNN=1)
  # The libraries are assembled from the modules' objects (lib/CMakeLists.txt):
  # they link what this property lists.
  set_property(GLOBAL APPEND PROPERTY NNC_CUDA_LINK_LIBRARIES ${NNC_CUDNN_LIBRARY})
else()
  message(STATUS "cuDNN: not found (cudnn.h / libcudnn; set CMAKE_PREFIX_PATH to its folder); building without the GPU_CUDNN backends")
  target_sources(nnc_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cudnn_none.cpp)
endif()

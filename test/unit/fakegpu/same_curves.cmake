# The demo on the pretend GPU (steps in flight on a GPU stream, CPU_OPT
# kernels under GPU_REF's name) against the demo on the CPU, same data, order
# and initial weights: the curves (epoch, training loss, test accuracy) must be
# the same digits; only the seconds column may differ.
#   cmake -DCPU=<cpu curves.csv> -DGPU=<fakegpu curves.csv> -P same_curves.cmake
foreach(f IN ITEMS "${CPU}" "${GPU}")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "same_curves: ${f} is missing (did its demo run fail?)")
  endif()
endforeach()
function(curves path out)
  file(STRINGS "${path}" lines)
  set(kept "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ",[^,]*$" "" line "${line}")  # drop the seconds
    list(APPEND kept "${line}")
  endforeach()
  set(${out} "${kept}" PARENT_SCOPE)
endfunction()
curves("${CPU}" cpu)
curves("${GPU}" gpu)
list(LENGTH cpu n)
if(n LESS 3)
  message(FATAL_ERROR "same_curves: ${CPU} holds no trained epoch")
endif()
if(NOT cpu STREQUAL gpu)
  message(FATAL_ERROR "same_curves: the pretend-GPU demo's curves differ from the CPU demo's\n  CPU: ${cpu}\n  GPU: ${gpu}")
endif()
message(STATUS "same curves: ${gpu}")

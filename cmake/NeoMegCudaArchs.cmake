# The GPU architectures the CUDA kernels are compiled for. By default SASS for the GPUs people
# use now (sm_80 A100, sm_86 RTX 30xx/A10, sm_89 RTX 40xx/L4, sm_90 H100/H200) and for the newest
# architecture the toolkit knows, plus that one's PTX, which the driver compiles for GPUs newer
# still. NEOMEG_CUDA_ARCHS narrows it, in CMAKE_CUDA_ARCHITECTURES syntax: "80" (sm_80 SASS and
# compute_80 PTX, which runs everywhere from sm_80 up: CI builds only that), "90-real", "native".
set(NEOMEG_CUDA_ARCHS "" CACHE STRING
    "CUDA architectures (CMAKE_CUDA_ARCHITECTURES syntax); empty: 80;86;89;90 SASS and the toolkit's newest with PTX")

if(NOT NEOMEG_CUDA_ARCHS STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "${NEOMEG_CUDA_ARCHS}")
elseif(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  # The newest architecture of this nvcc: the largest of `nvcc --list-gpu-code` (sm_121 in 13.0).
  find_program(_neomeg_nvcc nvcc HINTS ${CMAKE_CUDA_COMPILER} ENV CUDACXX PATHS /usr/local/cuda/bin)
  set(_newest 90)
  if(_neomeg_nvcc)
    execute_process(COMMAND ${_neomeg_nvcc} --list-gpu-code OUTPUT_VARIABLE _codes
                    RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc EQUAL 0)
      string(REGEX MATCHALL "sm_[0-9]+" _codes "${_codes}")
      foreach(_code IN LISTS _codes)
        string(REPLACE "sm_" "" _n "${_code}")
        if(_n GREATER _newest)
          set(_newest ${_n})
        endif()
      endforeach()
    endif()
  endif()
  set(_archs 80-real 86-real 89-real 90-real)
  if(_newest GREATER 90)
    list(APPEND _archs ${_newest})  # SASS and PTX
  else()
    set(_archs 80-real 86-real 89-real 90)
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_archs}")
endif()

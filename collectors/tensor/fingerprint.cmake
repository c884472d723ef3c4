# The fingerprint kernel (collectors/tensor/fingerprint.cu) as a fatbin
# embedded in the binaries that link the OBJECT library
# tcgd_fingerprint_image (collectors/tensor/fingerprint_image.h). Included by
# collectors/CMakeLists.txt.
#
# nvcc compiles only this one file (SASS for sm_80, sm_90 and sm_100 where
# the toolkit has them, plus PTX of compute_100 or the toolkit's newest for
# later GPUs); the project itself does not enable the CUDA language. Without
# nvcc everything else still builds, the library holds no image, and the
# agent says that tensor probes are not in this build.
#
# Sets TCGD_HAVE_FINGERPRINT (cache, 1 or 0) for other directories, and the
# same compile definition on targets that link tcgd_fingerprint_image.

option(TCGD_FINGERPRINT_KERNEL "Build the fingerprint kernel with nvcc (tensor probes)" ON)

set(_tcgd_nvcc "")
if(NOT TCGD_FINGERPRINT_KERNEL)
  # as without nvcc
elseif(CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  set(_tcgd_nvcc "${CUDAToolkit_NVCC_EXECUTABLE}")
elseif(CUDAToolkit_FOUND)
  find_program(TCGD_NVCC_EXECUTABLE nvcc HINTS "${CUDAToolkit_BIN_DIR}" NO_DEFAULT_PATH)
  if(TCGD_NVCC_EXECUTABLE)
    set(_tcgd_nvcc "${TCGD_NVCC_EXECUTABLE}")
  endif()
endif()

add_library(tcgd_fingerprint_image OBJECT ${CMAKE_CURRENT_LIST_DIR}/fingerprint_image.cpp)
target_include_directories(tcgd_fingerprint_image PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(tcgd_fingerprint_image PRIVATE -fvisibility=hidden -fvisibility-inlines-hidden)

if(NOT _tcgd_nvcc)
  message(STATUS "nvcc not found or TCGD_FINGERPRINT_KERNEL off: the fingerprint kernel is not built, "
                 "tensor probes are not in this build")
  target_compile_definitions(tcgd_fingerprint_image PUBLIC TCGD_HAVE_FINGERPRINT=0)
  set(TCGD_HAVE_FINGERPRINT 0 CACHE INTERNAL "The fingerprint kernel's fatbin is embedded")
  return()
endif()

# Which of the wanted architectures this toolkit compiles for.
if(NOT DEFINED TCGD_FINGERPRINT_GENCODE)
  execute_process(COMMAND ${_tcgd_nvcc} --list-gpu-code OUTPUT_VARIABLE _tcgd_codes
                  RESULT_VARIABLE _tcgd_rc ERROR_QUIET)
  execute_process(COMMAND ${_tcgd_nvcc} --list-gpu-arch OUTPUT_VARIABLE _tcgd_archs ERROR_QUIET)
  set(_tcgd_codes "${_tcgd_codes}\n")
  # PTX for GPUs newer than the SASS: compute_100, or the newest the toolkit has.
  string(REGEX MATCHALL "compute_[0-9]+" _tcgd_computes "${_tcgd_archs}")
  set(_tcgd_ptx "")
  foreach(c IN LISTS _tcgd_computes)
    string(REPLACE "compute_" "" n "${c}")
    if(n EQUAL 100)
      set(_tcgd_ptx 100)
      break()
    endif()
    if(n LESS 100 AND (NOT _tcgd_ptx OR n GREATER _tcgd_ptx))
      set(_tcgd_ptx ${n})
    endif()
  endforeach()
  set(_tcgd_gencode "")
  foreach(sm 80 90 100)
    if(_tcgd_codes MATCHES "sm_${sm}\n")
      if(sm EQUAL _tcgd_ptx)  # one front-end pass gives both
        list(APPEND _tcgd_gencode "-gencode=arch=compute_${sm},code=[sm_${sm},compute_${sm}]")
        set(_tcgd_ptx "")
      else()
        list(APPEND _tcgd_gencode "-gencode=arch=compute_${sm},code=sm_${sm}")
      endif()
    endif()
  endforeach()
  if(_tcgd_ptx)
    list(APPEND _tcgd_gencode "-gencode=arch=compute_${_tcgd_ptx},code=compute_${_tcgd_ptx}")
  endif()
  # Compressed, the image is a tenth of its size (needs driver 580 for CUDA
  # 13, which CUDA 13 needs anyway); older toolkits lack the option.
  execute_process(COMMAND ${_tcgd_nvcc} --help OUTPUT_VARIABLE _tcgd_help ERROR_QUIET)
  if(_tcgd_help MATCHES "--compress-mode")
    list(APPEND _tcgd_gencode "--compress-mode=size")
  endif()
  if(NOT _tcgd_rc EQUAL 0 OR NOT _tcgd_gencode)
    message(WARNING "${_tcgd_nvcc} lists none of sm_80/90/100: tensor probes are not in this build")
    target_compile_definitions(tcgd_fingerprint_image PUBLIC TCGD_HAVE_FINGERPRINT=0)
    set(TCGD_HAVE_FINGERPRINT 0 CACHE INTERNAL "The fingerprint kernel's fatbin is embedded")
    return()
  endif()
  set(TCGD_FINGERPRINT_GENCODE "${_tcgd_gencode}" CACHE STRING
      "nvcc -gencode (and compression) options of the fingerprint kernel")
endif()

# Vectors in flight per thread (fingerprint.cu, kUnroll): 4, or 8 to measure
# it against 4 (docs/development.md). Every bit of a slot is the same.
set(TCGD_FINGERPRINT_UNROLL 4 CACHE STRING "Vectors in flight per thread in the fingerprint kernel (4 or 8)")
if(NOT TCGD_FINGERPRINT_UNROLL MATCHES "^[48]$")
  message(FATAL_ERROR "TCGD_FINGERPRINT_UNROLL=${TCGD_FINGERPRINT_UNROLL}: expected 4 or 8")
endif()

# Blocks per SM the kernel is compiled to fit (fingerprint.cu,
# __launch_bounds__): 2 gives it 96 registers a thread and no spills; 4 holds
# it to 64, where ptxas spills (CUDA 13, sm_90), and measured slower
# (docs/performance.md). Every bit of a slot is the same.
set(TCGD_FINGERPRINT_MIN_BLOCKS 2 CACHE STRING "Blocks per SM the fingerprint kernel is compiled to fit (1, 2 or 4)")
if(NOT TCGD_FINGERPRINT_MIN_BLOCKS MATCHES "^[124]$")
  message(FATAL_ERROR "TCGD_FINGERPRINT_MIN_BLOCKS=${TCGD_FINGERPRINT_MIN_BLOCKS}: expected 1, 2 or 4")
endif()

# The chunking every binary of the build takes (CMakeLists.txt).
list(TRANSFORM TCGD_FINGERPRINT_CHUNKING PREPEND -D OUTPUT_VARIABLE _tcgd_chunking)

set(_tcgd_fatbin ${CMAKE_CURRENT_BINARY_DIR}/fingerprint.fatbin)
# -O3 and no FMA contraction (the sums' rounding is part of the format);
# -Werror keeps the device code as warning-free as the host code; two
# threads compile the architectures in parallel (CI has two cores).
add_custom_command(
  OUTPUT ${_tcgd_fatbin}
  COMMAND ${_tcgd_nvcc} -fatbin -O3 -std=c++17 --fmad=false --threads 2
          -Werror all-warnings -ccbin ${CMAKE_CXX_COMPILER}
          ${TCGD_FINGERPRINT_GENCODE}
          -I${PROJECT_SOURCE_DIR} -DTCGD_FINGERPRINT_UNROLL=${TCGD_FINGERPRINT_UNROLL}
          -DTCGD_FINGERPRINT_MIN_BLOCKS=${TCGD_FINGERPRINT_MIN_BLOCKS} ${_tcgd_chunking}
          -o ${_tcgd_fatbin} ${CMAKE_CURRENT_LIST_DIR}/fingerprint.cu
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fingerprint.cu ${CMAKE_CURRENT_LIST_DIR}/fingerprint_abi.h
          ${CMAKE_CURRENT_LIST_DIR}/fingerprint_claim.h
  COMMENT "nvcc: the fingerprint kernel (${TCGD_FINGERPRINT_GENCODE})"
  VERBATIM)
add_custom_target(tcgd_fingerprint_fatbin DEPENDS ${_tcgd_fatbin})

add_dependencies(tcgd_fingerprint_image tcgd_fingerprint_fatbin)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/fingerprint_image.cpp PROPERTIES
  OBJECT_DEPENDS ${_tcgd_fatbin})
target_compile_definitions(tcgd_fingerprint_image
  PUBLIC TCGD_HAVE_FINGERPRINT=1
  PRIVATE TCGD_FINGERPRINT_FATBIN="${_tcgd_fatbin}")
set(TCGD_HAVE_FINGERPRINT 1 CACHE INTERNAL "The fingerprint kernel's fatbin is embedded")

# Finds every third-party dependency. An option that is ON but whose package is missing stops
# configure with one line naming the package and the option that turns it off.
macro(hetsim_require found package option)
  if(NOT ${found})
    message(FATAL_ERROR "hetsim: ${package} not found; run ./install-deps.sh or configure with -D${option}=OFF")
  endif()
endmacro()

find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(tomlplusplus 3.3 REQUIRED)          # header is <toml++/toml.h> in 3.3
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(fmt 9 REQUIRED)

if(HETSIM_WITH_SIMGRID)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SimGrid IMPORTED_TARGET simgrid>=3.32)
  hetsim_require(SimGrid_FOUND "SimGrid (libsimgrid-dev)" HETSIM_WITH_SIMGRID)
endif()

if(HETSIM_WITH_GUI)
  set(CMAKE_AUTOMOC ON)
  find_package(Qt6 6.4 COMPONENTS Widgets Charts Test Svg)
  hetsim_require(Qt6_FOUND "Qt 6 (qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev)" HETSIM_WITH_GUI)
endif()

if(HETSIM_WITH_MPI)
  find_package(MPI COMPONENTS CXX)
  hetsim_require(MPI_CXX_FOUND "MPI (libopenmpi-dev)" HETSIM_WITH_MPI)
endif()

# CUDA: AUTO turns it on when /usr/local/cuda has nvcc.
if(HETSIM_WITH_CUDA STREQUAL "AUTO")
  if(EXISTS /usr/local/cuda/bin/nvcc)
    set(HETSIM_WITH_CUDA ON)
  else()
    set(HETSIM_WITH_CUDA OFF)
  endif()
endif()
if(HETSIM_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)             # "native" fails on machines without a GPU
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  hetsim_require(CMAKE_CUDA_COMPILER "CUDA toolkit (/usr/local/cuda)" HETSIM_WITH_CUDA)
  enable_language(CUDA)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")   # CMake 3.25 lacks nvcc's C++20 flag
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  find_package(CUDAToolkit REQUIRED)
  # NCCL ships inside the CUDA tree here, without a CMake package: an imported target by hand.
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  hetsim_require(NCCL_LIBRARY "NCCL (nccl.h and libnccl in the CUDA toolkit)" HETSIM_WITH_CUDA)
  if(NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
endif()

# HIP: AUTO turns it on when hipcc is installed. Debian's HIP has no hipBLAS or RCCL: the backend
# brings its own GEMM and stages collectives through host memory.
if(HETSIM_WITH_HIP STREQUAL "AUTO")
  find_program(HETSIM_HIPCC hipcc)
  if(HETSIM_HIPCC)
    set(HETSIM_WITH_HIP ON)
  else()
    set(HETSIM_WITH_HIP OFF)
  endif()
endif()
if(HETSIM_WITH_HIP)
  find_package(hip CONFIG PATHS /usr/lib/x86_64-linux-gnu/cmake)
  hetsim_require(hip_FOUND "HIP (./install-deps.sh --hip)" HETSIM_WITH_HIP)
endif()

if(HETSIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(HETSIM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

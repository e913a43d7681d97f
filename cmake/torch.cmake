# Finds libtorch inside the Python environment's PyTorch (torch.utils.cmake_prefix_path), so the
# same build works on CI (PyPI torch==2.11.0) and on the GPU machine (its preinstalled torch).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c "import torch; print(torch.utils.cmake_prefix_path)"
  OUTPUT_VARIABLE _linear_ard_torch_prefix
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _linear_ard_torch_rc
  ERROR_QUIET)
if(NOT _linear_ard_torch_rc EQUAL 0 AND SKBUILD)
  # `pip install .` builds in an isolated environment (PYTHONPATH to its own packages) that hides
  # the torch installed beside this interpreter; `python -I` ignores that and sees it: the op must
  # be built against the torch it will be loaded into, not a fresh download.
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -I -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _linear_ard_torch_prefix
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _linear_ard_torch_rc)
endif()
if(NOT _linear_ard_torch_rc EQUAL 0)
  message(FATAL_ERROR "linear-ard: ${Python3_EXECUTABLE} cannot import torch; install torch==2.11.0 "
                      "(scripts/test.sh does) or pass -DPython3_EXECUTABLE=<python with torch>")
endif()
list(APPEND CMAKE_PREFIX_PATH "${_linear_ard_torch_prefix}")
# With libtorch, its CMake replaces CMAKE_CUDA_ARCHITECTURES by gencode flags from
# TORCH_CUDA_ARCH_LIST for every CUDA target: that list decides which GPUs the kernels run on.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
find_package(Torch REQUIRED)
message(STATUS "linear-ard: libtorch from ${_linear_ard_torch_prefix}")

# PyPI's libtorch exports its own copies of libstdc++ symbols (std::filesystem, iostreams) built
# against a newer libstdc++ whose layouts differ from the system one our inline code uses. Whichever
# library comes first in a binary's NEEDED list wins those symbols, so every libtorch user links
# this target, which puts libstdc++ first (else e.g. std::filesystem::remove_all crashes).
# OpenMP too: libtorch is built with it, and ATen's inline at::parallel_for runs in parallel only
# where _OPENMP is defined (one setting for every libtorch user, which the shared precompiled
# header of cmake/torch_pch.cmake also needs).
add_library(linear_ard_torch INTERFACE)
target_link_libraries(linear_ard_torch INTERFACE stdc++ ${TORCH_LIBRARIES} OpenMP::OpenMP_CXX)

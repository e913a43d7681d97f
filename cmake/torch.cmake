# Finds libtorch inside the Python environment's PyTorch (torch.utils.cmake_prefix_path), so the
# same build works on CI (PyPI torch==2.11.0) and on the GPU machine (its preinstalled torch).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c "import torch; print(torch.utils.cmake_prefix_path)"
  OUTPUT_VARIABLE _linear_ard_torch_prefix
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _linear_ard_torch_rc)
if(NOT _linear_ard_torch_rc EQUAL 0)
  message(FATAL_ERROR "linear-ard: ${Python3_EXECUTABLE} cannot import torch; install torch==2.11.0 "
                      "(scripts/test.sh does) or pass -DPython3_EXECUTABLE=<python with torch>")
endif()
list(APPEND CMAKE_PREFIX_PATH "${_linear_ard_torch_prefix}")
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
find_package(Torch REQUIRED)
message(STATUS "linear-ard: libtorch from ${_linear_ard_torch_prefix}")

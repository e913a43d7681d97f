# Unity builds of the libtorch targets: their C++ sources compiled several to a translation unit.
#
# With the precompiled <torch/torch.h> (cmake/torch_pch.cmake), what remains of a libtorch unit's
# compile is mostly loading that header (about 6 s of CPU) and instantiating and optimising the same
# torch inline code as the unit beside it; a unit of several files does both once (docs/testing.md
# has the figures). CMake concatenates each target's sources in the order the target lists them, in
# batches of LINEAR_ARD_UNITY_BUILD_BATCH_SIZE, and each batch reuses the precompiled header as a
# single file would. What that asks of the sources:
#  - the file-local names (anonymous namespaces, static functions, const globals) of one target's
#    files differ, since a later batch size or file order may put any two in one unit;
#  - a file whose own #include list misses a header still compiles when an earlier file of its
#    batch includes it: -DLINEAR_ARD_UNITY_BUILD=OFF compiles file by file and catches that;
#  - a test file keeps its fixtures in the anonymous namespace of its tests: GCC warns
#    (-Wsubobject-linkage) about a class whose base is in an anonymous namespace of a file that is
#    not the unit's main file.
# CUDA sources stay out (SKIP_UNITY_BUILD_INCLUSION: CMake 3.25 merges only C and C++ sources, later
# versions CUDA too); the targets without libtorch (core, the tokenizers, their tests) compile file
# by file: there is no large header for them to share.
# linear_ard_torch_unity_apply(), called once after every target is defined, marks the targets that
# linear_ard_torch_targets() (cmake/torch_pch.cmake) finds: a new target needs nothing of its own.
option(LINEAR_ARD_UNITY_BUILD "Compile the libtorch targets' C++ sources several to a translation unit" ON)
set(LINEAR_ARD_UNITY_BUILD_BATCH_SIZE 8 CACHE STRING "Sources per unity translation unit (LINEAR_ARD_UNITY_BUILD)")

function(linear_ard_torch_unity_apply)
  if(NOT LINEAR_ARD_UNITY_BUILD OR NOT TARGET linear_ard_torch)
    return()
  endif()
  linear_ard_torch_targets(targets)
  foreach(t IN LISTS targets)
    set_target_properties(${t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${LINEAR_ARD_UNITY_BUILD_BATCH_SIZE})
    get_target_property(sources ${t} SOURCES)
    get_target_property(dir ${t} SOURCE_DIR)
    list(FILTER sources INCLUDE REGEX "\\.cu$")
    list(TRANSFORM sources PREPEND "${dir}/" REGEX "^[^/]")
    if(sources)
      set_source_files_properties(${sources} TARGET_DIRECTORY ${t} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  list(LENGTH targets n)
  message(STATUS "linear-ard: unity builds of ${n} libtorch targets (batches of ${LINEAR_ARD_UNITY_BUILD_BATCH_SIZE})")
endfunction()

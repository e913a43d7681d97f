# One precompiled <torch/torch.h> for every target that compiles against libtorch.
#
# Parsing <torch/torch.h> costs about 18 s of CPU per translation unit with g++ 12 at -O3 (the whole
# of a short file's compile; docs/testing.md has the figures), loading its precompiled form about
# 6 s. The header is precompiled once, by linear_ard_torch_pch, and every libtorch target reuses that
# copy (REUSE_FROM) instead of precompiling its own (47 s and 690 MB each). GCC uses a precompiled
# header only when the compile agrees with the one that made it on what the header can see, and
# silently parses the header again otherwise (-Winvalid-pch, which CMake adds, says so), so:
#  - every libtorch translation unit is compiled -fPIC, executables' too (their default is -fPIE);
#  - every one has _OPENMP defined (-fopenmp, through linear_ard_torch in cmake/torch.cmake), as
#    libtorch itself is built: ATen's inline at::parallel_for tests it;
#  - the macros of the copy's own compile (libtorch's USE_* and NDEBUG) are defined in all; a
#    target's own -D macros are free, since torch's headers do not name them.
# linear_ard_torch_pch_apply(), called once after every target is defined, finds the targets that
# link linear_ard_torch (directly or through the libraries they link) and points them at the copy:
# a new target needs nothing of its own. -DLINEAR_ARD_TORCH_PCH=OFF builds without it.
option(LINEAR_ARD_TORCH_PCH "Precompile <torch/torch.h> once for every libtorch target" ON)

# _linear_ard_links_torch(<out-var> <target>): whether <target> links linear_ard_torch, directly or
# through the link interface of what it links.
function(_linear_ard_links_torch out target)
  set(pending ${target})
  set(seen)
  while(pending)
    list(POP_FRONT pending t)
    if(t IN_LIST seen OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    if(t STREQUAL "linear_ard_torch")
      set(${out} ON PARENT_SCOPE)
      return()
    endif()
    get_target_property(type ${t} TYPE)
    set(libs)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(libs ${t} LINK_LIBRARIES)
    endif()
    get_target_property(interface ${t} INTERFACE_LINK_LIBRARIES)
    foreach(lib IN LISTS libs interface)
      # $<LINK_ONLY:x> in a static library's interface still links x (and its headers come with it).
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
      if(lib AND NOT lib MATCHES "-NOTFOUND$")
        list(APPEND pending ${lib})
      endif()
    endforeach()
  endwhile()
  set(${out} OFF PARENT_SCOPE)
endfunction()

# _linear_ard_targets(<out-var> <dir>): the build-system targets of <dir> and its subdirectories.
function(_linear_ard_targets out dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _linear_ard_targets(sub_targets ${sub})
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# linear_ard_torch_targets(<out-var>): the targets that compile sources against libtorch (they link
# linear_ard_torch), the precompiled header's own copy left out.
function(linear_ard_torch_targets out)
  _linear_ard_targets(targets ${PROJECT_SOURCE_DIR})
  set(users)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$"
       OR t STREQUAL "linear_ard_torch_pch")
      continue()
    endif()
    _linear_ard_links_torch(links ${t})
    if(links)
      list(APPEND users ${t})
    endif()
  endforeach()
  set(${out} ${users} PARENT_SCOPE)
endfunction()

function(linear_ard_torch_pch_apply)
  if(NOT LINEAR_ARD_TORCH_PCH OR NOT TARGET linear_ard_torch)
    return()
  endif()
  # The copy: an object library whose one (empty) source is compiled with it.
  set(source ${PROJECT_BINARY_DIR}/linear_ard_torch_pch.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "// compiled with the precompiled <torch/torch.h> (cmake/torch_pch.cmake)\n")
  add_library(linear_ard_torch_pch OBJECT ${source})
  target_link_libraries(linear_ard_torch_pch PRIVATE linear_ard_torch)
  set_target_properties(linear_ard_torch_pch PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_precompile_headers(linear_ard_torch_pch PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:<torch/torch.h$<ANGLE-R>>")

  linear_ard_torch_targets(users)
  foreach(t IN LISTS users)
    target_precompile_headers(${t} REUSE_FROM linear_ard_torch_pch)
    # After CMake's -fPIE for executables; the last of -fPIE/-fPIC wins.
    target_compile_options(${t} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fPIC>)
  endforeach()
  list(LENGTH users n)
  message(STATUS "linear-ard: precompiled <torch/torch.h> shared by ${n} targets")
endfunction()

# Third-party libraries beyond libtorch. A layer that needs a missing one is left out of the build
# with a warning (the GPU machine's image has no Debian -dev packages), unless
# LINEAR_ARD_REQUIRE_ALL is on (scripts/test.sh, hence CI), which makes a missing one an error.
option(LINEAR_ARD_REQUIRE_ALL "Fail when a library some layer needs is missing" OFF)

find_package(PkgConfig QUIET)
find_package(nlohmann_json 3.10 QUIET)
find_package(CLI11 QUIET)
find_package(yaml-cpp QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
  pkg_check_modules(UTF8PROC QUIET IMPORTED_TARGET libutf8proc)
  pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
endif()
# Without pkg-config (the GPU machine's image), look in CMAKE_PREFIX_PATH for the header and the
# library (dev/gpu/device_deps_build.sh installs them there) and make the same imported targets.
# linear_ard_find_library(<PREFIX> <header> <library>...): sets <PREFIX>_FOUND, PkgConfig::<PREFIX>.
function(linear_ard_find_library prefix header)
  if(${prefix}_FOUND)
    return()
  endif()
  find_path(${prefix}_INCLUDE_DIR ${header})
  set(libs)
  foreach(name IN LISTS ARGN)
    find_library(${prefix}_LIB_${name} ${name})
    if(NOT ${prefix}_LIB_${name})
      return()
    endif()
    list(APPEND libs ${${prefix}_LIB_${name}})
  endforeach()
  if(${prefix}_INCLUDE_DIR)
    add_library(PkgConfig::${prefix} INTERFACE IMPORTED GLOBAL)
    target_include_directories(PkgConfig::${prefix} INTERFACE ${${prefix}_INCLUDE_DIR})
    target_link_libraries(PkgConfig::${prefix} INTERFACE ${libs})
    set(${prefix}_FOUND ON PARENT_SCOPE)
  endif()
endfunction()
linear_ard_find_library(PCRE2 pcre2.h pcre2-8)
linear_ard_find_library(UTF8PROC utf8proc.h utf8proc)
linear_ard_find_library(SENTENCEPIECE sentencepiece_processor.h sentencepiece sentencepiece_train)

# linear_ard_require(<var> <what needs it> <dependency found?>...): sets <var> to whether all found.
function(linear_ard_require var what)
  set(ok ON)
  foreach(found IN LISTS ARGN)
    if(NOT ${found})
      set(ok OFF)
      if(LINEAR_ARD_REQUIRE_ALL)
        message(FATAL_ERROR "linear-ard: ${what} needs ${found}, which was not found (scripts/setup.sh installs it)")
      endif()
      message(WARNING "linear-ard: ${what} left out: ${found} not found")
    endif()
  endforeach()
  set(${var} ${ok} PARENT_SCOPE)
endfunction()

linear_ard_require(LINEAR_ARD_BUILD_TOKENIZER "the tokenizers" nlohmann_json_FOUND PCRE2_FOUND UTF8PROC_FOUND
                   SENTENCEPIECE_FOUND)
if(LINEAR_ARD_WITH_TORCH)
  linear_ard_require(LINEAR_ARD_BUILD_IO "the io layer" nlohmann_json_FOUND)
  # The trainer reads YAML configs and tokenizes its text data.
  linear_ard_require(LINEAR_ARD_BUILD_TRAIN "the trainer" nlohmann_json_FOUND yaml-cpp_FOUND
                     LINEAR_ARD_BUILD_TOKENIZER)
  linear_ard_require(LINEAR_ARD_BUILD_CLI "the linear-ard binary" nlohmann_json_FOUND CLI11_FOUND
                     LINEAR_ARD_BUILD_TRAIN)
else()
  set(LINEAR_ARD_BUILD_IO OFF)
  set(LINEAR_ARD_BUILD_TRAIN OFF)
  set(LINEAR_ARD_BUILD_CLI OFF)
endif()

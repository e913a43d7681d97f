# What `cmake --install` and `pip install .` put where (docs/ecosystem.md).
#
# pip install . (scikit-build-core, pyproject.toml): only the op library, into the wheel's
# linear_ard package beside its Python files (wheel.packages); `import linear_ard` loads it from there.
#
# cmake --install BUILD --prefix P:
#   P/bin/linear-ard                                   the command line
#   P/lib/liblinear_ard_ops.so, liblinear_ard_model.so   the op family and the model layer
#   P/include/linear_ard/...                           the headers
#   P/share/linear-ard/plot.py                         the figures script the binary runs
#   P/lib/pythonX.Y/site-packages/linear_ard/          the Python package, which loads P/lib's op library
# Installed binaries and libraries find each other through $ORIGIN-relative RPATHs, and libtorch
# through the absolute path of the Python environment's torch/lib, named explicitly: CMake's
# INSTALL_RPATH_USE_LINK_PATH leaves out link directories inside the source or build tree, which is
# where a project-local .venv (scripts/test.sh's) puts torch.
include(GNUInstallDirs)

if(SKBUILD)
  install(TARGETS linear_ard_ops LIBRARY DESTINATION linear_ard COMPONENT python)
  return()
endif()

set(LINEAR_ARD_INSTALL_PYTHONDIR
    "${CMAKE_INSTALL_LIBDIR}/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages"
    CACHE STRING "Where cmake --install puts the linear_ard Python package (relative to the prefix)")

set(_linear_ard_installed linear_ard_ops linear_ard_model)
set(_linear_ard_torch_rpath "${TORCH_INSTALL_PREFIX}/lib")
foreach(target IN LISTS _linear_ard_installed)
  set_target_properties(${target} PROPERTIES
    INSTALL_RPATH "$ORIGIN;${_linear_ard_torch_rpath}" INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()
install(TARGETS ${_linear_ard_installed} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/linear_ard DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY python/linear_ard DESTINATION ${LINEAR_ARD_INSTALL_PYTHONDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
if(TARGET linear_ard_cli)
  set_target_properties(linear_ard_cli PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${_linear_ard_torch_rpath}" INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS linear_ard_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(PROGRAMS scripts/plot.py DESTINATION ${CMAKE_INSTALL_DATADIR}/linear-ard)
endif()

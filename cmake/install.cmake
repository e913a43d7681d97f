# What `cmake --install` and `pip install .` put where (docs/ecosystem.md).
#
# pip install . (scikit-build-core, pyproject.toml): the package is a small prefix of its own,
#   site-packages/linear_ard/liblinear_ard_{ops,model}.so   beside the Python files (wheel.packages)
#   site-packages/linear_ard/bin/linear-ard                 the command line, which the `linear-ard`
#                                                           entry point (linear_ard/_cli.py) runs
#   site-packages/linear_ard/share/linear-ard/*.py          the scripts the binary runs
# found through $ORIGIN-relative RPATHs; libtorch through the torch package beside it
# (site-packages/torch/lib) or, failing that, the build's torch by absolute path.
#
# cmake --install BUILD --prefix P:
#   P/bin/linear-ard                                   the command line
#   P/lib/liblinear_ard_ops.so, liblinear_ard_model.so   the op family and the model layer
#   P/include/linear_ard/...                           the headers
#   P/share/linear-ard/*.py                            the scripts the binary runs (plot, GGUF export,
#                                                      TensorBoard writer)
#   P/lib/pythonX.Y/site-packages/linear_ard/          the Python package, which loads P/lib's op library
# Installed binaries and libraries find each other through $ORIGIN-relative RPATHs, and libtorch
# through the absolute path of the Python environment's torch/lib, named explicitly: CMake's
# INSTALL_RPATH_USE_LINK_PATH leaves out link directories inside the source or build tree, which is
# where a project-local .venv (scripts/test.sh's) puts torch.
include(GNUInstallDirs)

set(_linear_ard_scripts scripts/plot.py scripts/export_gguf.py scripts/tensorboard_follow.py)
if(SKBUILD)
  set_target_properties(linear_ard_ops linear_ard_model PROPERTIES
    INSTALL_RPATH "$ORIGIN;$ORIGIN/../torch/lib;${TORCH_INSTALL_PREFIX}/lib")
  install(TARGETS linear_ard_ops linear_ard_model LIBRARY DESTINATION linear_ard COMPONENT python)
  if(TARGET linear_ard_cli)
    set_target_properties(linear_ard_cli PROPERTIES
      INSTALL_RPATH "$ORIGIN/..;$ORIGIN/../../torch/lib;${TORCH_INSTALL_PREFIX}/lib")
    install(TARGETS linear_ard_cli RUNTIME DESTINATION linear_ard/bin COMPONENT python)
    install(PROGRAMS ${_linear_ard_scripts} DESTINATION linear_ard/share/linear-ard COMPONENT python)
  endif()
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
  install(PROGRAMS ${_linear_ard_scripts} DESTINATION ${CMAKE_INSTALL_DATADIR}/linear-ard)
endif()

# Installs the build tree into PREFIX (a fresh folder) and checks what `cmake --install` puts
# there: hetsim, hetsim-exec and hetsim-gui in bin/ (with the simgrid engine module when the build
# has one), the desktop entry and icon, and every bundled scenario (scenarios/**.toml and
# scenarios/README.md) under share/hetsim/scenarios with its layout. The installed hetsim then
# reads an installed scenario that names a catalogue by a relative path.
# Run with -DBUILD=<build dir> -DSOURCE=<source dir> -DPREFIX=<folder>.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(expected bin/hetsim bin/hetsim-exec bin/hetsim-gui share/applications/hetsim-gui.desktop
             share/icons/hicolor/scalable/apps/hetsim-gui.svg)
if(EXISTS ${BUILD}/bin/libhetsim_simgrid.so)
  list(APPEND expected bin/libhetsim_simgrid.so)
endif()
foreach(f ${expected})
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(READ ${PREFIX}/share/applications/hetsim-gui.desktop desktop)
if(NOT desktop MATCHES "\nExec=hetsim-gui %f\n" OR NOT desktop MATCHES "\nIcon=hetsim-gui\n")
  message(FATAL_ERROR "the desktop entry does not start hetsim-gui with its icon")
endif()

# The scenarios: the same relative paths as in the source tree, and nothing else.
set(share ${PREFIX}/share/hetsim/scenarios)
file(GLOB_RECURSE bundled RELATIVE ${SOURCE}/scenarios ${SOURCE}/scenarios/*.toml)
list(APPEND bundled README.md)
file(GLOB_RECURSE installed RELATIVE ${share} ${share}/*)
list(SORT bundled)
list(SORT installed)
foreach(sub profiles purchase validation)
  if(NOT bundled MATCHES "(^|;)${sub}/[^;]*\\.toml")
    message(FATAL_ERROR "the source tree has no scenarios/${sub}/*.toml: ${SOURCE} is not the source tree")
  endif()
endforeach()
if(NOT bundled STREQUAL installed)
  set(missing ${bundled})
  list(REMOVE_ITEM missing ${installed})
  set(extra ${installed})
  list(REMOVE_ITEM extra ${bundled})
  message(FATAL_ERROR "share/hetsim/scenarios differs from scenarios/: missing [${missing}], extra [${extra}]")
endif()
foreach(f ${bundled})
  file(SHA256 ${SOURCE}/scenarios/${f} a)
  file(SHA256 ${share}/${f} b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "installed scenarios/${f} differs from the source tree's")
  endif()
endforeach()

# The installed tools run from the prefix: hetsim-exec answers, and hetsim simulates an installed
# scenario whose catalogue (profiles/cpu-dev.toml) is found beside it; with SimGrid's module too.
execute_process(COMMAND ${PREFIX}/bin/hetsim-exec --version RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed hetsim-exec --version failed (${rc}): ${err}")
endif()
set(engines native)
if(EXISTS ${PREFIX}/bin/libhetsim_simgrid.so)
  list(APPEND engines simgrid)
endif()
foreach(engine ${engines})
  execute_process(COMMAND ${PREFIX}/bin/hetsim simulate --engine ${engine} ${share}/cpu-pipeline.toml
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "step")
    message(FATAL_ERROR "installed hetsim simulate --engine ${engine} on the installed cpu-pipeline.toml failed (${rc}): ${err}")
  endif()
endforeach()
list(LENGTH bundled n)
message(STATUS "installed: hetsim, hetsim-exec, hetsim-gui, the desktop entry and icon, ${n} scenario files; "
               "hetsim simulates an installed scenario (${engines})")

# packaging.cmake - Debian packages with CPack (`make deb`; included by the
# top-level CMakeLists.txt after every install rule).
#
# One package per install component:
#
#   component  package           what
#   runtime    libbaton<major>   libbaton.so.<major> and the interposer,
#                                libbaton-preload.so (LD_PRELOAD)
#   dev        libbaton-dev      headers, libbaton.a, the libbaton.so link,
#                                baton.pc, the CMake package (find_package)
#   tools      baton-tools       the `baton` command and the scripts it runs
#
# Version, names and library major come from project(): the package of
# libbaton.so.0 is libbaton0, and a new major renames it.  The packages are
# built from a tree configured for /usr (make deb: build-deb/), so the
# libraries land in the multiarch directory and `baton run` finds the
# interposer at the path it was built for (src/cli/CMakeLists.txt).
# tests/deb/ checks them: every installed file is in exactly one package,
# and the examples build against an unpacked copy and run.

set(BATON_DEB_RUNTIME "libbaton${PROJECT_VERSION_MAJOR}")
set(BATON_DEB_DEV "libbaton-dev")
set(BATON_DEB_TOOLS "baton-tools")

# Who answers for the packages: the address baton's commits are made under
# until a release names a person (-DBATON_DEB_MAINTAINER="Name <address>").
set(BATON_DEB_MAINTAINER "The baton authors <maintainers@users.noreply.a-seed-8c21c7d2.example>"
    CACHE STRING "Maintainer field of the Debian packages (Name <address>)")

# baton-tools takes whatever is installed with COMPONENT tools: a script
# joins it by its install rule alone, as `baton plot`'s do
# (src/cli/CMakeLists.txt):
#
#   install(PROGRAMS tools/<script> DESTINATION ... COMPONENT tools)
#
# What a script needs at run time goes here, as Debian relations.  `baton
# plot` is optional and says what is missing: it runs the pinned matplotlib
# that share/baton/plot/plot-deps.sh puts into a virtual environment, so it
# suggests python3 and python3-venv.  The libraries that the `baton` binary
# links are found by dpkg-shlibdeps.
set(BATON_DEB_TOOLS_DEPENDS "")
set(BATON_DEB_TOOLS_SUGGESTS "python3, python3-venv")

# --- the copyright file of every package, from LICENSE -------------------------
# Debian wants /usr/share/doc/<package>/copyright in each package, in the
# machine-readable format: the holders and the licence text, taken from
# LICENSE so that it stays the one source.
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _license)
string(REGEX MATCH "^([^\n]*)\n" _ "${_license}")
set(_license_name "${CMAKE_MATCH_1}")
if(_license_name STREQUAL "MIT License")
  set(_license_name "Expat") # the name Debian gives the MIT licence
endif()
string(REGEX MATCH "\nCopyright \\(c\\) ([^\n]*)\n" _ "${_license}")
set(_license_holders "${CMAKE_MATCH_1}")
if(NOT _license_name OR NOT _license_holders)
  message(FATAL_ERROR "packaging.cmake: LICENSE has no licence name on its first line or no 'Copyright (c) ...' line")
endif()
# The text after the copyright line, as a field continuation: each line
# indented by one space, empty lines written " .".
string(FIND "${_license}" "${CMAKE_MATCH_0}" _at)
string(LENGTH "${CMAKE_MATCH_0}" _len)
math(EXPR _at "${_at} + ${_len}")
string(SUBSTRING "${_license}" ${_at} -1 _license_text)
string(STRIP "${_license_text}" _license_text)
string(REPLACE "\n" "\n " _license_text " ${_license_text}")
string(REGEX REPLACE "\n \n" "\n .\n" _license_text "${_license_text}")
string(REGEX REPLACE "\n \n" "\n .\n" _license_text "${_license_text}") # runs of empty lines
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deb/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ${PROJECT_NAME}

Files: *
Copyright: ${_license_holders}
License: ${_license_name}
${_license_text}
")

# --- and its changelog ----------------------------------------------------------
# One entry, for this version; what changed is CHANGELOG.md's (shipped in
# baton-tools' documentation).  The date is SOURCE_DATE_EPOCH's when set
# (reproducible builds), else the time of configuring.
string(TIMESTAMP _deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deb/changelog
"${PROJECT_NAME} (${PROJECT_VERSION}) unstable; urgency=medium

  * Version ${PROJECT_VERSION}, packaged with CPack (make deb).

 -- ${BATON_DEB_MAINTAINER}  ${_deb_date}
")
# Both go into /usr/share/doc/<package>/ of every package, the changelog
# compressed as Debian wants it (gzip -9n: no name, no time stamp).
foreach(_component runtime dev tools)
  string(TOUPPER ${_component} _c)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deb/copyright
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${BATON_DEB_${_c}} COMPONENT ${_component})
endforeach()
find_program(BATON_GZIP gzip)
set(_rc 1)
if(BATON_GZIP)
  execute_process(COMMAND ${BATON_GZIP} -9nf ${CMAKE_CURRENT_BINARY_DIR}/deb/changelog
                  RESULT_VARIABLE _rc)
endif()
if(_rc EQUAL 0)
  foreach(_component runtime dev tools)
    string(TOUPPER ${_component} _c)
    install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deb/changelog.gz
      DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${BATON_DEB_${_c}} COMPONENT ${_component})
  endforeach()
else()
  message(WARNING "packaging.cmake: no gzip, so the Debian packages will have no changelog")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${BATON_DEB_TOOLS} COMPONENT tools)

# --- what lintian is told ------------------------------------------------------
# The interposer is loaded by path (LD_PRELOAD, `baton run`), never linked
# against, so its name carries no version.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deb/${BATON_DEB_RUNTIME}.lintian-overrides
"# libbaton-preload.so is an LD_PRELOAD module, loaded by path, not linked against.
${BATON_DEB_RUNTIME}: shared-library-lacks-version usr/lib/*/libbaton-preload.so libbaton-preload.so
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deb/${BATON_DEB_RUNTIME}.lintian-overrides
  DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME ${BATON_DEB_RUNTIME} COMPONENT runtime)
# The loader's cache learns of the libraries through dpkg's ldconfig trigger.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deb/triggers "activate-noawait ldconfig\n")
# The static library without its debug information, as the shared one (the
# packages' binaries are stripped: CPACK_STRIP_FILES).
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:baton_static>\")
endif()" COMPONENT dev)

# --- CPack ---------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME ${PROJECT_NAME})
set(CPACK_PACKAGE_VENDOR "The baton authors")
set(CPACK_PACKAGE_CONTACT "${BATON_DEB_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON) # the debug information stays in the build tree
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The C library and the others that the binaries link, from dpkg-shlibdeps;
# the shlibs file of libbaton0 says what a program linked against this
# version needs: libbaton0 of this version or later.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# libbaton-dev and baton-tools need libbaton0 of exactly their version (the
# libbaton.so link; the interposer that `baton run` loads).
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${BATON_DEB_RUNTIME})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/deb/triggers)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
"fast, scalable and frugal locks for multicore machines
baton is a C11 library of lock algorithms chosen by a string at run time
(MCS, CLH, ticket, queue delegation, remote core locking, lock servers,
hardware lock elision over any kind, and a default that hands the lock only
to a running thread), with wait policies that cost little CPU (spin-then-park
with a budget measured on the machine, futex park, UMWAIT/MWAITX), and
barriers.

This package holds the shared library and libbaton-preload.so, which puts
baton's locks under unmodified programs through LD_PRELOAD (pthread mutexes,
condition variables, readers-writer locks, spin locks, barriers and GNU
OpenMP locks).")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${BATON_DEB_DEV})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
"fast, scalable and frugal locks for multicore machines - development files
baton is a C11 library of lock algorithms chosen by a string at run time,
wait policies that cost little CPU, and barriers.

This package holds the headers (baton/baton.h, the typed per-algorithm
headers), the static library, and what finds them: pkg-config (baton) and
a CMake package (find_package(baton): baton::baton, baton::baton_static).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${BATON_DEB_TOOLS})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${BATON_DEB_TOOLS_DEPENDS}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "${BATON_DEB_TOOLS_SUGGESTS}")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
"command-line tool of the baton lock library
baton runs programs under baton's interposer (baton run), profiles their
locks (baton profile), compares lock kinds on a program (baton advise),
benchmarks baton's locks against the C library's and those of other
libraries (baton bench), draws the benchmarks' results (baton plot, with
Python and matplotlib), and tests every kind under faults (baton torture).
baton info describes the machine; baton kinds lists the lock kinds.")

# DEB packages from a tree configured for another prefix would put the
# libraries outside the multiarch directory: refuse (cmake/cpack_options.cmake).
set(BATON_CONFIGURED_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/cpack_options.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cpack_options.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_BINARY_DIR}/cpack_options.cmake)

include(CPack)

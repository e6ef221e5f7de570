# Writes version.h with the commit the source tree is at now. Run at every build (the target
# dsa_version in CMakeLists.txt), not only at configure time: run headers record this commit, so a
# rebuild after a pull or a commit must not keep the old one. configure_file rewrites the file
# only when its text changes, so an unchanged commit rebuilds nothing.
#   cmake -DSRC_DIR=... -DDST=... -DPROJECT_VERSION=... -P git_version.cmake
# SPDX-License-Identifier: GPL-3.0-or-later
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SRC_DIR} OUTPUT_VARIABLE DSA_GIT_HASH
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT DSA_GIT_HASH)
  set(DSA_GIT_HASH "unknown")
endif()
configure_file(${SRC_DIR}/src/version.h.in ${DST} @ONLY)

# DSA_KERNELS_ONLY: the indexer stack, `kernels check` and `kernels bench` without the rest of
# dsa-eval, so a GPU machine without the curl/jansson/PCRE2/GSL/OpenSSL development headers
# can build and check the kernels. Included from the top-level CMakeLists.txt.
# SPDX-License-Identifier: GPL-3.0-or-later
add_library(dsacore STATIC src/util/msg.c src/util/buf.c src/util/opt.c src/cmd_kernels.c)
target_include_directories(dsacore PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src
  ${CMAKE_SOURCE_DIR}/kernels/include)
target_compile_definitions(dsacore PUBLIC DSA_KERNELS_ONLY_BUILD=1)
find_package(Threads REQUIRED)
target_link_libraries(dsacore PUBLIC Threads::Threads ${CMAKE_DL_LIBS} m)
add_subdirectory(kernels)
add_executable(dsa-eval bench/kernels_only_main.c)
target_link_libraries(dsa-eval PRIVATE dsacore)

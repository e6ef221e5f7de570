# The RULER eval's data (datasets/ruler/*.txt: the haystack substitute and the word lists)
# embedded in dsacore (evals/ruler_data.h), and ICU for the scorer's Unicode lowercasing
# (evals/ruler_score.c). The generated file is rebuilt when a file changes.
# SPDX-License-Identifier: GPL-3.0-or-later
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
target_link_libraries(dsacore PUBLIC PkgConfig::ICU)
file(GLOB DSA_RULER_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/datasets/ruler/*.txt)
list(SORT DSA_RULER_FILES)
set(DSA_RULER_C ${CMAKE_BINARY_DIR}/generated/dsa_ruler_data.c)
add_custom_command(OUTPUT ${DSA_RULER_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${DSA_RULER_C} "-DFILES=${DSA_RULER_FILES}"
    -DHEADER=evals/ruler_data.h -DSTRUCT=dsa_ruler_blob -DTABLE=dsa_ruler_blobs -DCHARS=1
    -P ${CMAKE_SOURCE_DIR}/datasets/embed.cmake
  DEPENDS ${DSA_RULER_FILES} ${CMAKE_SOURCE_DIR}/datasets/embed.cmake
  COMMENT "Embedding datasets/ruler/*.txt"
  VERBATIM)
target_sources(dsacore PRIVATE ${DSA_RULER_C})

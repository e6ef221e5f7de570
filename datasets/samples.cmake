# The shipped samples (datasets/samples/*.jsonl) embedded in dsacore, so the binary carries
# its default MRCR data wherever it is installed (datasets/samples.h). The generated file is
# rebuilt when a sample changes.
# SPDX-License-Identifier: GPL-3.0-or-later
file(GLOB DSA_SAMPLE_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/datasets/samples/*.jsonl)
list(SORT DSA_SAMPLE_FILES)
set(DSA_SAMPLES_C ${CMAKE_BINARY_DIR}/generated/dsa_samples_data.c)
add_custom_command(OUTPUT ${DSA_SAMPLES_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${DSA_SAMPLES_C} "-DFILES=${DSA_SAMPLE_FILES}"
    -DHEADER=datasets/samples.h -DSTRUCT=dsa_sample -DTABLE=dsa_samples
    -P ${CMAKE_SOURCE_DIR}/datasets/embed.cmake
  DEPENDS ${DSA_SAMPLE_FILES} ${CMAKE_SOURCE_DIR}/datasets/embed.cmake
  COMMENT "Embedding datasets/samples/*.jsonl"
  VERBATIM)
target_sources(dsacore PRIVATE ${DSA_SAMPLES_C})

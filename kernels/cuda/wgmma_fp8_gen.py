#!/usr/bin/env python3
# Writes kernels/cuda/wgmma_fp8.cuh (the m64nNk32 e4m3 wgmma wrappers; the operand lists are
# long): python3 kernels/cuda/wgmma_fp8_gen.py kernels/cuda/wgmma_fp8.cuh && clang-format -i it.
# SPDX-License-Identifier: GPL-3.0-or-later
import sys
out = []
out.append("""/*
 * fp8 wgmma (Hopper, SASS QGMMA) wrappers for the S3a wgmma decode kernel: D[64 x n] (+)=
 * A[64 x 32] * B[n x 32]^T, e4m3 x e4m3 -> f32, both operands K-major in shared memory, named by
 * the 64-bit matrix descriptors da and db. `accumulate` = 0 overwrites D (the first k-step).
 * D fragment of thread t of the warpgroup (warp w = t / 32, g = t % 32 / 4, c = t % 4): d[i] is
 * row 16w + g + 8 * (i / 2 % 2), column 8 * (i / 4) + 2c + i % 2. Generated once by a short
 * script (the operand lists are long), kept as source; one function per n.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CUDA_WGMMA_FP8_CUH
#define DSA_KERNELS_CUDA_WGMMA_FP8_CUH

#include <stdint.h>

template <int NC> struct dw_mma;
""")
for n in (32, 64, 96, 128, 192, 256):
    r = n // 2
    regs = ", ".join("%%%d" % i for i in range(r))
    lines = []
    lines.append("template <> struct dw_mma<%d> {" % n)
    lines.append("    static __device__ __forceinline__ void run(float (&d)[%d], uint64_t da, uint64_t db, int accumulate)" % r)
    lines.append("    {")
    lines.append("        asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"" % (r + 2))
    lines.append("                     \"wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3 {\"" % n)
    # split register list into chunks
    names = ["%%%d" % i for i in range(r)]
    for k in range(0, r, 16):
        chunk = ", ".join(names[k:k+16])
        sep = ", " if k + 16 < r else ""
        lines.append("                     \"%s%s\"" % (chunk, sep))
    lines.append("                     \"}, %%%d, %%%d, p, 1, 1;\\n}\\n\"" % (r, r + 1))
    outs = ", ".join('"+f"(d[%d])' % i for i in range(r))
    lines.append("                     : " + outs)
    lines.append("                     : \"l\"(da), \"l\"(db), \"r\"(accumulate));")
    lines.append("    }")
    lines.append("};")
    out.append("\n".join(lines) + "\n")
out.append("#endif\n")
open(sys.argv[1], "w").write("\n".join(out))

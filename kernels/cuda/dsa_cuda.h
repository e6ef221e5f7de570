/*
 * Internal to kernels/cuda: the launchers behind the op switch in api.cu. Each enqueues its
 * kernels on the stream and returns a DSA_K_* status; api.cu checks cudaGetLastError() once
 * after the switch and names the op.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef DSA_KERNELS_CUDA_DSA_CUDA_H
#define DSA_KERNELS_CUDA_DSA_CUDA_H

#include <cuda_runtime.h>

#include "dsa_kernels.h"

/* S1/S2: the kernels read their inputs (raw k/q and weights, LayerNorm weights, positions,
   slots, RoPE tables) before the programmatic wait for the kernel before them (prep.cu), so no
   kernel launched just before may write those inputs; in this API they are only uploaded */
int dsa_cuda_k_prep_launch(const dsa_k_flags *f, const dsa_k_prep_args *a, cudaStream_t st);
int dsa_cuda_q_prep_launch(const dsa_k_flags *f, const dsa_q_prep_args *a, cudaStream_t st);
/* both in one grid: k's blocks first, then q's (the fill after it, as q_prep's) */
int dsa_cuda_prep_launch(const dsa_k_flags *f, const dsa_k_prep_args *k, const dsa_q_prep_args *q,
                         cudaStream_t st);
int dsa_cuda_logits_decode_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                  cudaStream_t st);
/* the fp8 wgmma S3a kernel (decode_wgmma.cu, DSA_CUDA_LOGITS=wgmma); DSA_K_UNSUPPORTED for
   shapes it does not take (heads other than 32, 64) */
int dsa_cuda_decode_wgmma_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                 cudaStream_t st);
/* the pipelined S3a kernel (decode.cu); DSA_K_UNSUPPORTED for shapes it leaves to logits.cu */
int dsa_cuda_decode_pipe_launch(const dsa_k_flags *f, const dsa_logits_decode_args *a,
                                cudaStream_t st);
/* the fp8 wgmma S3b kernels' entry (prefill_wgmma.cu; the default, DSA_CUDA_LOGITS=mma|simt
   select logits.cu's): the four-warpgroup kernel below at H = 64, the two-half kernel of
   prefill_wgmma.cu at H = 32 and with DSA_CUDA_PREFILL=two; DSA_K_UNSUPPORTED for shapes
   neither takes (heads other than 32, 64, k8 not 16-byte aligned, NK past int32) */
int dsa_cuda_prefill_wgmma_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                  cudaStream_t st);
/* the four-warpgroup S3b kernel (prefill_wg4.cu; the launch above calls it at H = 64 unless
   DSA_CUDA_PREFILL=two): the same contract; DSA_K_UNSUPPORTED at H != 64 or 2^31 tiles */
int dsa_cuda_prefill_wg4_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                cudaStream_t st);
int dsa_cuda_logits_prefill_launch(const dsa_k_flags *f, const dsa_logits_prefill_args *a,
                                   cudaStream_t st);
int dsa_cuda_topk_launch(const dsa_k_flags *f, const dsa_topk_args *a, cudaStream_t st);

#endif

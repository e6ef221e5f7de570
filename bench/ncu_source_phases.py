#!/usr/bin/env python3
# Sums ncu's source page (ncu --import R.ncu-rep --page source --csv --print-source cuda,sass,
# as bench/topk_profile_device.sh writes it) by function of kernels/cuda/topk.cu: executed
# warp instructions and stall samples per function, other files by name. The line ranges are
# those of topk.cu at 9970d85 (round 12's profile, bench/RESULTS.md); edit RANGES for another tree.
#   python3 bench/ncu_source_phases.py final_kernel-source.csv
# SPDX-License-Identifier: GPL-3.0-or-later
import collections
import csv
import sys

rows=list(csv.reader(open(sys.argv[1])))
RANGES = [(105,124,'hist_add'),(125,157,'rank_bin'),(158,217,'select_bits'),(218,231,'select_in_smem'),(232,264,'select_adaptive'),(265,292,'count_select'),(293,372,'sample/row_threshold'),(373,418,'sample kernels'),(519,591,'full_row_select'),(592,612,'take_candidates'),(613,646,'seg_in/seg_ids'),(647,680,'copy_candidates'),(681,730,'final_row'),(731,749,'final_kernel')]
cur=None;hdr=None;agg=collections.Counter();samp=collections.Counter()
for r in rows:
    if not r: continue
    if r[0]=="File Path": cur=r[1].split('/')[-1]; continue
    if r[0] in("Function Name",): continue
    if r[0]=="Line No": hdr=r; continue
    if hdr is None or not r[0].isdigit(): continue
    d=dict(zip(hdr,r))
    try: ie=int(d["Instructions Executed"] or 0); ss=int(d["Warp Stall Sampling (All Samples)"] or 0)
    except: continue
    ln=int(r[0])
    if cur=='topk.cu':
        name=next((n for a,b,n in RANGES if a<=ln<=b),'topk other %d'%ln)
    else: name=cur
    agg[name]+=ie; samp[name]+=ss
t=sum(agg.values())
for n,v in agg.most_common(): print(f"{n:28s} {v:8d} {100*v/t:5.1f}%  samples {samp[n]}")
print("total",t)

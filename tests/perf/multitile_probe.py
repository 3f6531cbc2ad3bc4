#!/usr/bin/env python3
"""Probe (not the catalogue's model): would letting the GEMM tile model choose among several tile
sizes, as cuBLAS does (its Hopper kernels in tests/perf/data/h200/torch_step*/ profiles use 128x192
to 320x128 tiles), close the model's gap on TP-sliced shapes? Evaluates the tile model of
models/cost/compute.cpp (h200-sxm's figures) with extra tile options, each with a main-loop
efficiency relative to 128x256, against the H200 microbenchmarks (tests/perf/data/h200/) and XLA's
H100 table (tests/perf/data/xla_matmul_sm_90.csv). Columns: throughput model / measured - 1
(negative: the model is slow) over the H200 transformer shapes (signed, |mean|), those with
min(m,n,k) >= 2048 and < 1024, and XLA's shapes with min >= 1024.
Usage: python3 tests/perf/multitile_probe.py   (docs/microbenchmarks.md §9b)"""
import csv, json, math, os, statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
peak=989e12; sms=132; t0=3e-6; mem=4.8e12*0.865; launch=2.5e-6
def model(m,n,k,b,main,tiles):
    rate=peak*main/sms; best=math.inf
    for (tm,tn,eta) in tiles:
        nt=math.ceil(m/tm)*math.ceil(n/tn)*b
        for split in (1,2,4,8,16):
            if split>1 and (nt*split/2>=sms or k/split<128): break
            waves=math.ceil(nt*split/sms)
            t=waves*(2*tm*tn*math.ceil(k/split)/(rate*eta)+t0)
            if split>1: t+=2*split*m*n*b*4/mem
            best=min(best,t)
    return max(best,(m*k+k*n+m*n)*2*b/mem)+launch
rows=[json.loads(l) for l in open(os.path.join(ROOT, 'tests/perf/data/h200/microbench.jsonl'))]
g=[r for r in rows if r.get('kind')=='gemm' and r['dtype']=='bf16' and (r['label'].startswith(('gpt','llama')) or min(r['m'],r['n'],r['k'])>=1024)]
xla=[]
for row in csv.DictReader(open(os.path.join(ROOT, 'tests/perf/data/xla_matmul_sm_90.csv'))):
    if row['dtype'].startswith('bf16xbf16') and int(row['b'])==1:
        xla.append((int(row['m']),int(row['n']),int(row['k']),float(row['flops_per_s'])))
def score(tiles, main=0.745):
    e=[r["s"]/model(r['m'],r['n'],r['k'],1,main,tiles)-1 for r in g]
    big=[x for r,x in zip(g,e) if min(r['m'],r['n'],r['k'])>=2048]
    small=[x for r,x in zip(g,e) if min(r['m'],r['n'],r['k'])<1024]
    ex=[2*m*n*k/model(m,n,k,1,main,tiles)/f-1 for m,n,k,f in xla if min(m,n,k)>=1024]
    return statistics.mean(e), statistics.mean(map(abs,e)), statistics.mean(big), statistics.mean(small), statistics.mean(ex)
base=[(128,256,1.0)]
print("base 128x256:", ["%+.3f"%x for x in score(base)])
for eta in (0.80,0.85,0.90,0.95):
    print("eta128x128=%.2f"%eta, ["%+.3f"%x for x in score(base+[(256,128,1.0),(128,128,eta)])])
for eta in (0.85,0.9,0.95):
    print("+192x192 eta .97, 128x128 %.2f"%eta, ["%+.3f"%x for x in score(base+[(256,128,1.0),(192,192,0.97),(128,128,eta)])])

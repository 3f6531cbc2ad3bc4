# A Python copy of hetsim's all-to-all formulas as they stood before 2026-12-07 (flat NCCL
# all-to-all and DeepEP-style hierarchical dispatch), used by docs/research-a2a.md to check them
# against published microbenchmarks; the changes it led to are in docs/cost-models.md#algorithms.
from math import lgamma, exp, comb
def lch(n,k): return lgamma(n+1)-lgamma(k+1)-lgamma(n-k+1)
def none_of(n,hit,k): return 0.0 if n-hit<k else exp(lch(n-hit,k)-lch(n,k))
def D(E,k,N,G=0,g=0):
    if N<=1: return 1
    per_node=E/N
    if G<=0 or g<=0 or (G%N!=0 and N%G!=0): return N*(1-none_of(E,per_node,k))
    if G<N:
        spanned=g*(N/G); return spanned*(1-none_of(g*(E/G),per_node,k))
    own=G//N; pg=E/G; miss=0
    for j in range(0,min(own,g)+1):
        if g-j>G-own: continue
        pj=exp(lch(own,j)+lch(G-own,g-j)-lch(G,g)); miss+=pj*none_of(g*pg,j*pg,k)
    return N*(1-miss)
NIC=50e9*0.97; A_N=14e-6; CALL=8.4e-6
def fab(bw=450e9): return bw*0.816
A_F=3.4e-6
def flat(S,n,k,Bf=fab(),Bn=NIC,an=A_N):
    bw=S*(k-1)/n/Bf; lat=A_F*(k-1)
    if n>k: bw=max(bw,S*(n-k)/n/Bn); lat=an*(n-1)
    return bw,lat+CALL
def hier(copy,T,E,topk,n,k,G=0,g=0,Bf=fab(),Bn=NIC,an=A_N):
    N=n//k; d=D(E,topk,N,G,g); remote=d*(N-1)/N
    bwf=copy*T*topk*(k-1)/k/Bf; bwn=copy*T*remote/Bn
    return max(bwf,bwn), A_F*(k-1)+an*(N-1)+CALL, d, bwf, bwn
if __name__=="__main__":
    # nemo-25.11 Qwen3: flat, T=2048, h=4096, e=2, top8
    S=2048*8*4096*2; bw,lat=flat(S,32,8); print("qwen flat S=%.1fMB bw=%.3fms lat=%.3fms tot=%.3fms x48=%.2fms"%(S/1e6,bw*1e3,lat*1e3,(bw+lat)*1e3,48*(bw+lat)*1e3))
    bw,lat,d,bf,bn=hier(4096*2,2048,128,8,32,8); print("qwen hier D=%.3f bwNIC=%.3f bwFab=%.3f lat=%.3f tot=%.3f x48=%.2f"%(d,bn*1e3,bf*1e3,lat*1e3,(bw+lat)*1e3,48*(bw+lat)*1e3))
    # DSV3 H800: T=4096,h=7168, fwd dispatch fp8 (1+4/128), combine bf16 e=2; EP64 k=8; groups 8/4; fabric 200GB/s
    for w in (1+4/128,2):
        bw,lat,d,bf,bn=hier(7168*w,4096,256,8,64,8,8,4,Bf=fab(200e9)); print("dsv3 h800 w=%.3f D=%.3f bwNIC=%.3f bwFab=%.3f lat=%.3f tot=%.3f"%(w,d,bn*1e3,bf*1e3,lat*1e3,(bw+lat)*1e3))
    # DSV3 nemo 25.09 ETP2: k=4 N=16; ETP1: k=8 N=8; T=2048, e=2
    for k in (4,8):
        bw,lat,d,bf,bn=hier(7168*2,2048,256,8,64,k,8,4); print("dsv3 nemo k=%d D=%.3f bwNIC=%.3f bwFab=%.3f lat=%.3f tot=%.3f x32=%.2f"%(k,d,bn*1e3,bf*1e3,lat*1e3,(bw+lat)*1e3,32*(bw+lat)*1e3))
